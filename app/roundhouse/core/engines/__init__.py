"""Engines: the catalog, finding them on this machine, and preparing their launches."""

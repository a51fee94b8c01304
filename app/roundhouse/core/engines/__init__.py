"""Engines: the catalog, finding them on this machine, installing them, and preparing their
launches.

Floor 3 of roundhouse.core: it may use supervise, the floor-1 packages (hardware) and infra.
"""

"""Hostile requests and files against every way into Roundhouse, each refused."""

"""Routers of the control API, one module per area."""

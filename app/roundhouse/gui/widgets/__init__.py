"""Reusable widgets: banner, charts and inventory cards."""

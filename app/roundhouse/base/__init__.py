"""Stdlib-level helpers every layer may use: where files live, where resources are."""

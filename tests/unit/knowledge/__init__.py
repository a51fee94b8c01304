"""Tests of model knowledge: GGUF headers, config.json, shapes and the fit estimate."""

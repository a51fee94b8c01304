"""Tests of models: GGUF headers, the Hub, downloads, the library and memory fit."""

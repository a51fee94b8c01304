"""Tests of models: the Hub, downloads, Ollama pulls and the library."""

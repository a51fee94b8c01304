"""Tests of the Ollama client, against the Ollama stand-in run as a real process."""

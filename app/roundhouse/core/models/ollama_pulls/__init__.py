"""Ollama pulls in the download queue: persisted jobs that pull through Ollama's own API."""

"""Ollama's API (`/api/chat`, `/api/generate`, `/api/embed`...) translated for every engine."""

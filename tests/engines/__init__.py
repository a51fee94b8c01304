"""Helpers and fixtures for tests that run real LLM engines."""

"""Model knowledge: what a model is from its files (GGUF headers, config.json) and whether it
fits this machine. Layer 2 of the core: uses infra only; features above read from it."""

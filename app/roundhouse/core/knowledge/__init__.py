"""Model knowledge: what a model is from its files (GGUF headers, config.json, its shape)
and whether it fits this machine (the fit estimate and its advice).

Floor 1 of roundhouse.core, beside hardware, chat and system (none imports another): it
may use infra and core.errors only. Acquiring models (the Hub, downloads, the library) is
models' work, a floor above.
"""

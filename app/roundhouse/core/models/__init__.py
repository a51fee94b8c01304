"""Models: the Hugging Face Hub, downloads, the local library, GGUF headers and memory fit."""

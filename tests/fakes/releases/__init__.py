"""A STAND-IN for GitHub's release API and downloads, serving llama.cpp-like release archives."""

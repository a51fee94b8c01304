"""The OpenAI-compatible gateway: route a model name to an instance and relay its replies."""

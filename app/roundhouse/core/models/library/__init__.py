"""The local model library: the HF cache, the user's folders, LM Studio's and Ollama's models.

Importers name the module they use (`library.places`, `library.service`): the daemon reads the
places at start, while the service and its libraries (huggingface_hub's API, gguf) load in a
thread beside the start, so this package imports nothing itself."""

"""Models: the Hugging Face Hub, downloads, Ollama pulls, the local library, and the fitter
of named models.

Floor 5 of roundhouse.core: it may use instances and every floor below (today it needs
engines, knowledge and infra); what a model is and whether it fits is knowledge, below.
"""

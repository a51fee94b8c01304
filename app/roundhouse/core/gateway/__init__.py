"""The OpenAI-compatible gateway: route a model name to an instance and relay its replies,
with its key and the live figures (LiveStats) it writes for metrics.

Floor 6 of roundhouse.core: it may use models, instances and every floor below.
"""

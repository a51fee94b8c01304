"""Live metrics per instance: the gateway's view of every stream, processes, engines, history.

Floor 7 of roundhouse.core: it may use the gateway (its LiveStats) and every floor below;
nothing in the core imports metrics.
"""

"""Live metrics per instance: the gateway's view of every stream, processes, engines, history."""

"""Anthropic's Messages API on the gateway: passed through where the engine speaks it, else
translated to and from chat completions."""

"""OpenAI's Responses API on the gateway: passed through or translated to chat completions."""

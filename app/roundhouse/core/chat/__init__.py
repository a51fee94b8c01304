"""Chat: conversations and their messages in SQLite, and the chat turn, owned by the daemon.

A turn (`turns.py`) saves the user's message, streams the reply and saves it measured
(`meter.py`); it reaches the gateway through a function that opens a reply, handed in by
the server, so nothing here imports the gateway.

Floor 1 of roundhouse.core, beside hardware, knowledge and system (none imports another):
it may use infra and core.errors only.
"""

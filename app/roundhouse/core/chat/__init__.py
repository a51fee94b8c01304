"""Chat history: conversations and their messages in SQLite, owned by the daemon.

Floor 1 of roundhouse.core, beside hardware, knowledge and system (none imports another):
it may use infra and core.errors only.
"""

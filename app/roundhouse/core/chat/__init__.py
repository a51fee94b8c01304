"""Chat history: conversations and their messages in SQLite, owned by the daemon."""

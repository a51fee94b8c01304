"""The core's ground floor: plumbing every feature shares (SQLite, worker threads, transfers, jobs, the change feed)."""

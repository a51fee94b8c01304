"""The core's ground floor: plumbing features share (SQLite, threads, transfers, jobs, the feed)."""

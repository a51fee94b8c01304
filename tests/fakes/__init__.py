"""Stand-ins for programs that cannot run here, started as real processes."""

"""Multi-user replication scaling (seed 003 §7.3): N clients through one server, measured
by the native ``jitterlab-repl`` tool, one stored run per N (docs/replication.md)."""

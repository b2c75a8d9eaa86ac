"""Core: what every room uses and that knows nothing of latency — errors, units, atomic
file I/O, the progress bar, text tables, the version and native program lookup."""

"""Across nodes (seed 004): namespaces or hosts, node agents, transports, impairment."""

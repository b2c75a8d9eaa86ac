"""Simulate: latency models built from runs or parameters, the native injection engine
(``Injector``), the UDP/TCP proxy and its validation against the model."""

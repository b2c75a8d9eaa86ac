"""Live latency monitoring inside experiments (seed 003 §4.3, §5.1 baseline mode):
``Monitor`` records from an application into a shared-memory ring (ctypes over the C
recorder), ``serve`` drains it, classifies each sample against a baseline run, stores the
samples as a run in rolling parts and serves Prometheus metrics; trial screening and SSQ
files live here too. Writes runs through :mod:`jitterlab.store`; never imports describe."""

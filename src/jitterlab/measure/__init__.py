"""Measure: what runs harnesses and writes runs — bench plans, the native/JVM job runner,
the JVM harness, hiccup, the pipeline scenario, load, tracing, the environment and the
doctor. It reads and writes through :mod:`jitterlab.store` and never imports describe."""

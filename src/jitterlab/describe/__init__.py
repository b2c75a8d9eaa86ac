"""Describe: reads stored runs only and never starts a process — the analysis of a run,
spike attribution from the trace events stored with it, every table's rows, text for the
terminal, comparisons, the context block, the HTML report and the exporters."""

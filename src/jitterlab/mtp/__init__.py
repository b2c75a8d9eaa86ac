"""Motion-to-photon latency (seed 003 §4.2–4.3): from a video of a physical object and its
rendered counterpart (tracking, 1-D projection, three delay estimators), and from per-frame
sensor logs (motor step against the step a photodiode code reports). Results are ordinary
runs written through :mod:`jitterlab.store`; this room never imports describe.
Method and formulas: docs/mtp.md."""

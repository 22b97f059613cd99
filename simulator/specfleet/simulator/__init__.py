"""PURE fleet simulator: performance model, acceptance, traces, fleet simulation, policy evaluation.

Everything here is pure (numpy only) except `cli.py` and `plots.py`, the thin I/O shell of
`specfleet simulate`.
"""

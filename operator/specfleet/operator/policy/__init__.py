"""PURE speculation policy: cost model, forecast, schedule, stability rules and the decision core.

Nothing here does I/O; the operator's timer and the fleet simulator drive `decide` with plain values.
"""

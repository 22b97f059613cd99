"""`specfleet profile`: replay the user's requests against an engine over concurrencies and k; find crossovers.

PURE: workload (the JSONL of requests), plan (the sweep), measure (per-point statistics), crossover, report
(the JSON model and the terminal table). SHELL: replay (HTTP to the engine), plot (the PNG), cli.
"""

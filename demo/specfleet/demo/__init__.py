"""`specfleet demo`: the real operator against the emulator, with a local fleet playing kubelet and GPUs.

`engine.py`, `traffic.py`, `rollout.py` and `timeline.py` are pure; `fleet.py` (pods, metrics servers),
`prometheus.py`, `session.py`, `view.py`, `report.py` and `cli.py` are the shell.
"""

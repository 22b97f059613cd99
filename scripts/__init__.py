"""Repository tooling, run as `python3 -m scripts.<name>` from the repository root."""

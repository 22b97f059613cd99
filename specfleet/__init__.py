"""specfleet: a Kubernetes operator for speculative-decoding inference fleets."""

__version__ = "0.1.0"

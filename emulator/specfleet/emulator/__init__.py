"""A Kubernetes API emulator (a KMock KubernetesEmulator subclass) for tests and the demo.

Not a pure module: it serves HTTP and runs threads.
"""

from specfleet.emulator.peering import kopf_peering_crds
from specfleet.emulator.recording import RecordedRequest
from specfleet.emulator.server import EmulatorServer

__all__ = ["EmulatorServer", "RecordedRequest", "kopf_peering_crds"]

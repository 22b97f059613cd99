"""Where the runtime answers the kubelet's probes; the operator's pod template points at these."""

HEALTH_PORT = 8081
READY_PATH = "/ready"
LIVE_PATH = "/live"

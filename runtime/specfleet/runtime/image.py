"""What the runtime image is built with and expects of its pod: its user and the paths it writes.

The Dockerfile (`ARG UID`, `HF_HOME`, `VLLM_CACHE_ROOT`), the chart's securityContext and the pod template the
operator renders all follow these values; tests/render/test_one_uid.py checks that they agree.
"""

# The numeric user and group both images run as, and the engine pods' runAsUser, runAsGroup and fsGroup.
SPECFLEET_UID = 65532
# Model downloads (HF_HOME) and vLLM's compile cache (VLLM_CACHE_ROOT) go below it.
CACHE_DIR = "/cache"
# Scratch space: the root filesystem is read-only.
TMP_DIR = "/tmp"
# Shared memory for the engine's worker processes (memory-backed).
SHM_DIR = "/dev/shm"

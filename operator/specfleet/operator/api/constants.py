"""Names shared by the API, the operator and the runtime."""

from __future__ import annotations

GROUP = "specfleet.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

SDD_KIND = "SpecDecodeDeployment"
SDD_PLURAL = "specdecodedeployments"
SDD_SINGULAR = "specdecodedeployment"
SDD_SHORT_NAMES = ["sdd"]

POLICY_KIND = "SpeculationPolicy"
POLICY_PLURAL = "speculationpolicies"
POLICY_SINGULAR = "speculationpolicy"
POLICY_SHORT_NAMES = ["specpol"]

PROFILE_KIND = "SpeculationProfile"
PROFILE_PLURAL = "speculationprofiles"
PROFILE_SINGULAR = "speculationprofile"
PROFILE_SHORT_NAMES = ["specprof"]

# Labels and annotations the operator puts on what it renders.
LABEL_NAME = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_DEPLOYMENT = f"{GROUP}/deployment"
LABEL_CONFIG_HASH = f"{GROUP}/config-hash"
# On a profiling engine pod and Job: the SpeculationProfile they measure for (never LABEL_DEPLOYMENT: the fleet's
# indices, Service and signals must not take a profiling pod for one of the fleet's).
LABEL_PROFILE = f"{GROUP}/profile"
ANNOTATION_CONFIG_HASH = f"{GROUP}/config-hash"
ANNOTATION_SPEC_CONFIG = f"{GROUP}/speculative-config"
ANNOTATION_PAUSED = f"{GROUP}/paused"
# On a pod: the port serving /metrics when it is not the container port named `http` (local fleets).
ANNOTATION_METRICS_PORT = f"{GROUP}/metrics-port"
# On a pod: the port of its control endpoint (live tables) when it is not the container port named `health`.
ANNOTATION_CONTROL_PORT = f"{GROUP}/control-port"
MANAGER = "specfleet"

"""The parts of a fleet's pod template a user may set: scheduling, pull secrets, identity, volumes. Pure.

The operator owns the rest of the pod (its volumes and mounts, security context, probes, ports), so these types
refuse whatever would override it: a volume named as one of the operator's, a mount at, above or below a path
the operator mounts (below the cache is fine: that is where model caches go), volume sources that reach the
node, the host or the network (only persistentVolumeClaim, ephemeral, emptyDir, configMap and secret, which the
restricted Pod Security Standard allows and which need no driver), a fleet's control Secret, and the system
priority classes. Every name a pod refers to (a claim, a Secret, a ConfigMap, a ServiceAccount, a pull secret)
is one of the fleet's own namespace, since a pod can name nothing else. Each rule is a CEL rule of the CRD and
a Python check of the operator, with one message.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict, JsonValue

from specfleet.operator.api.base import ApiModel, cel
from specfleet.operator.api.quantity import Quantity
from specfleet.runtime.image import CACHE_DIR, SHM_DIR, TMP_DIR
from specfleet.runtime.table_control import DEFAULT_TOKEN_PATH

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# A path segment that is neither `.` nor `..` (RE2 has no lookahead, so spelled out).
_SEGMENT = r"([^/.:][^/:]*|\.[^/.:][^/:]*|\.\.[^/:]+)"
MOUNT_PATH_PATTERN = f"^(/{_SEGMENT})+$"
RELATIVE_PATH_PATTERN = f"^{_SEGMENT}(/{_SEGMENT})*$"

SHM_VOLUME, TMP_VOLUME, CACHE_VOLUME, CONTROL_VOLUME = "shm", "tmp", "cache", "control-token"
CONTROL_MOUNT, _, CONTROL_FILE = DEFAULT_TOKEN_PATH.rpartition("/")
# The per-fleet Secret `<fleet>-specfleet-control` holds the token of the fleet's live tables.
CONTROL_SECRET_SUFFIX = "-specfleet-control"
# The operator's volumes and where it mounts each in the engine container.
MANAGED_MOUNTS = {SHM_VOLUME: SHM_DIR, TMP_VOLUME: TMP_DIR, CACHE_VOLUME: CACHE_DIR, CONTROL_VOLUME: CONTROL_MOUNT}
# Paths below which a user's volume may go: a PVC at /cache/huggingface keeps downloaded weights across pods.
OPEN_BELOW = (CACHE_DIR,)
VOLUME_SOURCES = ("persistentVolumeClaim", "ephemeral", "emptyDir", "configMap", "secret")
MAX_VOLUMES = 32

ONE_SOURCE = (
    "a volume needs exactly one source: persistentVolumeClaim, ephemeral, emptyDir, configMap or secret "
    "(volumes of the node, the host or the network, such as hostPath or nfs, are refused)"
)
MANAGED_VOLUME = f"a volume may not be named as one of the operator's ({', '.join(MANAGED_MOUNTS)})"
CONTROL_SECRET = (
    f"a secret volume may not mount a fleet's control Secret (*{CONTROL_SECRET_SUFFIX}): "
    "the operator mounts the fleet's own token"
)
MANAGED_PATH = (
    f"mountPath may not be, contain or lie below a path the operator mounts ({', '.join(MANAGED_MOUNTS.values())}); "
    f"below {CACHE_DIR} is fine (e.g. {CACHE_DIR}/huggingface)"
)
MOUNT_PATH_SYNTAX = "mountPath must be an absolute path: no '.' or '..' segments, '//', ':' or trailing '/'"
UNKNOWN_VOLUME = "every volumeMount names one of spec.runtime.volumes"
DUPLICATE_VOLUME = "volume names must be unique"
DUPLICATE_MOUNT = "volumeMount mountPaths must be unique"
SYSTEM_PRIORITY = (
    "priorityClassName may not be a system- class (system-cluster-critical, system-node-critical): "
    "those are for the cluster's own components"
)
IN_NEEDS_VALUES = "operators In and NotIn need values; Exists and DoesNotExist take none"
GT_LT_VALUE = "operators Gt and Lt take exactly one value, an integer"
INTEGER = "^-?[0-9]+$"

SubdomainName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)]
LabelValue = Annotated[str, Field(max_length=63)]


def _requirement_rules(numeric: bool) -> JsonDict:
    rules: list[JsonValue] = [
        cel(
            "self.operator in ['In', 'NotIn'] ? (has(self.values) && self.values.size() > 0) : "
            "(self.operator in ['Gt', 'Lt'] || !has(self.values) || self.values.size() == 0)",
            IN_NEEDS_VALUES,
        )
    ]
    if numeric:
        rules.append(
            cel(
                "!(self.operator in ['Gt', 'Lt']) || "
                f"(has(self.values) && self.values.size() == 1 && self.values[0].matches('{INTEGER}'))",
                GT_LT_VALUE,
            )
        )
    return {"x-kubernetes-validations": rules}


def _requirement_problem(operator: str, values: list[str] | None) -> str | None:
    if operator in ("In", "NotIn"):
        return None if values else IN_NEEDS_VALUES
    if operator in ("Gt", "Lt"):
        return None if values and len(values) == 1 and re.fullmatch(INTEGER, values[0]) else GT_LT_VALUE
    return IN_NEEDS_VALUES if values else None


# ---------------------------------------------------------------- affinity (core/v1 Affinity)


class LabelSelectorRequirement(ApiModel):
    """One expression of a label selector."""

    model_config = ConfigDict(json_schema_extra=_requirement_rules(numeric=False))

    key: str = Field(min_length=1, max_length=317, description="Label key.")
    operator: str = Field(pattern=r"^(In|NotIn|Exists|DoesNotExist)$", description="In, NotIn, Exists or DoesNotExist.")
    values: list[LabelValue] | None = Field(default=None, max_length=64, description="Values for In and NotIn.")

    @model_validator(mode="after")
    def _check_values(self) -> LabelSelectorRequirement:
        problem = _requirement_problem(self.operator, self.values)
        if problem:
            raise ValueError(problem)
        return self


class LabelSelector(ApiModel):
    """Pods by their labels."""

    match_labels: dict[str, LabelValue] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="Labels the pods carry.",
        # The API server leaves an empty map out of the stored pod template: rendering one would drift forever.
        json_schema_extra={"x-kubernetes-validations": [cel("self.size() > 0", "matchLabels may not be empty")]},
    )
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, min_length=1, max_length=32, description="Expressions the pods' labels satisfy."
    )


class NodeSelectorRequirement(ApiModel):
    """One expression on a node's labels or fields."""

    model_config = ConfigDict(json_schema_extra=_requirement_rules(numeric=True))

    key: str = Field(min_length=1, max_length=317, description="Label or field key.")
    operator: str = Field(
        pattern=r"^(In|NotIn|Exists|DoesNotExist|Gt|Lt)$", description="In, NotIn, Exists, DoesNotExist, Gt or Lt."
    )
    values: list[LabelValue] | None = Field(
        default=None, max_length=64, description="Values for In and NotIn; one integer for Gt and Lt."
    )

    @model_validator(mode="after")
    def _check_values(self) -> NodeSelectorRequirement:
        problem = _requirement_problem(self.operator, self.values)
        if problem:
            raise ValueError(problem)
        return self


class NodeSelectorTerm(ApiModel):
    """Nodes matching every expression of the term."""

    match_expressions: list[NodeSelectorRequirement] | None = Field(
        default=None, min_length=1, max_length=32, description="Expressions on node labels."
    )
    match_fields: list[NodeSelectorRequirement] | None = Field(
        default=None, min_length=1, max_length=32, description="Expressions on node fields (metadata.name)."
    )


class NodeSelector(ApiModel):
    """Nodes matching any of the terms."""

    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1, max_length=32, description="The terms, ORed.")


class PreferredSchedulingTerm(ApiModel):
    """A node term the scheduler prefers, with its weight."""

    weight: int = Field(ge=1, le=100, description="Weight, 1 to 100.")
    preference: NodeSelectorTerm = Field(description="The preferred nodes.")


class NodeAffinity(ApiModel):
    """Which nodes the pods may or would rather run on."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = Field(
        default=None, description="Nodes the pods must run on."
    )
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = Field(
        default=None, min_length=1, max_length=32, description="Nodes the pods would rather run on."
    )


class PodAffinityTerm(ApiModel):
    """Pods (by labels, in some namespaces) whose topology domain the term is about."""

    label_selector: LabelSelector | None = Field(default=None, description="The pods.")
    namespaces: list[Annotated[str, Field(min_length=1, max_length=63, pattern=DNS_LABEL)]] | None = Field(
        default=None, min_length=1, max_length=32, description="Their namespaces (default: the fleet's)."
    )
    namespace_selector: LabelSelector | None = Field(default=None, description="Their namespaces, by labels.")
    topology_key: str = Field(min_length=1, max_length=317, description="Node label of the domain, e.g. zone.")


class WeightedPodAffinityTerm(ApiModel):
    """A pod term the scheduler prefers, with its weight."""

    weight: int = Field(ge=1, le=100, description="Weight, 1 to 100.")
    pod_affinity_term: PodAffinityTerm = Field(description="The term.")


class PodAffinity(ApiModel):
    """Pods to run near (podAffinity) or away from (podAntiAffinity)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = Field(
        default=None, min_length=1, max_length=32, description="Terms the placement must satisfy."
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = Field(
        default=None, min_length=1, max_length=32, description="Terms the placement would rather satisfy."
    )


class Affinity(ApiModel):
    """The engine pods' affinity, as in core/v1."""

    node_affinity: NodeAffinity | None = Field(default=None, description="Node affinity.")
    pod_affinity: PodAffinity | None = Field(default=None, description="Pods to run in the same domain as.")
    pod_anti_affinity: PodAffinity | None = Field(default=None, description="Pods to run in other domains than.")


# ---------------------------------------------------------------- volumes (core/v1 Volume, VolumeMount)


class LocalObjectReference(ApiModel):
    """An object of the fleet's namespace, by name."""

    name: SubdomainName = Field(description="Name of the object (an image pull Secret) in the fleet's namespace.")


class KeyToPath(ApiModel):
    """One key of a Secret or ConfigMap, as a file."""

    key: str = Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$", description="The key.")
    path: str = Field(max_length=1024, pattern=RELATIVE_PATH_PATTERN, description="Relative file path, without '..'.")
    mode: int | None = Field(default=None, ge=0, le=0o777, description="File mode bits (default: defaultMode).")


class SecretVolumeSource(ApiModel):
    """A Secret of the fleet's namespace, as files."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [cel(f"!self.secretName.endsWith('{CONTROL_SECRET_SUFFIX}')", CONTROL_SECRET)]
        }
    )

    secret_name: SubdomainName = Field(description="Name of the Secret in the fleet's namespace.")
    items: list[KeyToPath] | None = Field(
        default=None, min_length=1, max_length=64, description="Keys to project (default: every key)."
    )
    default_mode: int | None = Field(default=None, ge=0, le=0o777, description="Mode bits of the files.")
    optional: bool | None = Field(default=None, description="Start the pod without the Secret.")

    @field_validator("secret_name")
    @classmethod
    def _check_not_control(cls, name: str) -> str:
        if name.endswith(CONTROL_SECRET_SUFFIX):
            raise ValueError(f"{CONTROL_SECRET} (got {name})")
        return name


class ConfigMapVolumeSource(ApiModel):
    """A ConfigMap of the fleet's namespace, as files."""

    name: SubdomainName = Field(description="Name of the ConfigMap in the fleet's namespace.")
    items: list[KeyToPath] | None = Field(
        default=None, min_length=1, max_length=64, description="Keys to project (default: every key)."
    )
    default_mode: int | None = Field(default=None, ge=0, le=0o777, description="Mode bits of the files.")
    optional: bool | None = Field(default=None, description="Start the pod without the ConfigMap.")


class PersistentVolumeClaimVolumeSource(ApiModel):
    """A PersistentVolumeClaim of the fleet's namespace (e.g. a shared model cache)."""

    claim_name: SubdomainName = Field(description="Name of the claim in the fleet's namespace.")
    read_only: bool | None = Field(default=None, description="Mount it read-only.")


class EmptyDirVolumeSource(ApiModel):
    """Scratch space that lives as long as the pod."""

    medium: str | None = Field(default=None, pattern=r"^Memory$", description="Memory for tmpfs; unset: node disk.")
    size_limit: Quantity | None = Field(default=None, description="Most it may hold, e.g. 100Gi.")


class StorageRequest(ApiModel):
    """The storage a claim asks for."""

    storage: Quantity = Field(description="Size, e.g. 200Gi.")


class VolumeResources(ApiModel):
    """Resources of a claim."""

    requests: StorageRequest = Field(description="What the claim asks for.")


class PersistentVolumeClaimSpec(ApiModel):
    """The claim an ephemeral volume creates for each pod."""

    access_modes: list[
        Annotated[str, Field(pattern=r"^(ReadWriteOnce|ReadOnlyMany|ReadWriteMany|ReadWriteOncePod)$")]
    ] = Field(min_length=1, max_length=4, description="ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod.")
    storage_class_name: SubdomainName | None = Field(default=None, description="StorageClass (default: the cluster's).")
    resources: VolumeResources = Field(description="Requested size.")


class PersistentVolumeClaimTemplate(ApiModel):
    """Template of the per-pod claim."""

    spec: PersistentVolumeClaimSpec = Field(description="The claim's spec.")


class EphemeralVolumeSource(ApiModel):
    """A claim created with each pod and deleted with it (a per-pod cache larger than the node's disk)."""

    volume_claim_template: PersistentVolumeClaimTemplate = Field(description="The claim to create.")


class Volume(ApiModel):
    """A volume of the engine pods, beside the operator's own."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(" + ".join(f"(has(self.{source}) ? 1 : 0)" for source in VOLUME_SOURCES) + " == 1", ONE_SOURCE),
                cel(f"!(self.name in [{', '.join(repr(name) for name in MANAGED_MOUNTS)}])", MANAGED_VOLUME),
            ]
        }
    )

    name: str = Field(min_length=1, max_length=63, pattern=DNS_LABEL, description="Volume name (DNS label).")
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = Field(
        default=None, description="A PersistentVolumeClaim of the fleet's namespace."
    )
    ephemeral: EphemeralVolumeSource | None = Field(default=None, description="A claim created per pod.")
    empty_dir: EmptyDirVolumeSource | None = Field(default=None, description="Scratch space of the pod.")
    config_map: ConfigMapVolumeSource | None = Field(default=None, description="A ConfigMap, as files.")
    secret: SecretVolumeSource | None = Field(default=None, description="A Secret of the fleet's namespace, as files.")

    @model_validator(mode="before")
    @classmethod
    def _refuse_other_sources(cls, data: Any) -> Any:
        # Say which source is refused, rather than pydantic's "extra inputs are not permitted".
        if isinstance(data, dict):
            known = {"name", *VOLUME_SOURCES, *cls.model_fields}
            for key in data:
                if key not in known:
                    raise ValueError(f"{key} is not an allowed volume source: {ONE_SOURCE}")
        return data

    @model_validator(mode="after")
    def _check_volume(self) -> Volume:
        sources = [self.persistent_volume_claim, self.ephemeral, self.empty_dir, self.config_map, self.secret]
        if sum(source is not None for source in sources) != 1:
            raise ValueError(ONE_SOURCE)
        if self.name in MANAGED_MOUNTS:
            raise ValueError(f"{MANAGED_VOLUME} (got {self.name})")
        return self


def _managed_path_rule() -> str:
    checks = []
    for path in MANAGED_MOUNTS.values():
        checks += [f"self.mountPath != '{path}'", f"!'{path}'.startsWith(self.mountPath + '/')"]
        if path not in OPEN_BELOW:
            checks.append(f"!self.mountPath.startsWith('{path}/')")
    return " && ".join(checks)


def reaches_managed_path(path: str) -> bool:
    """Whether a mount at `path` would replace, hide or sit inside one of the operator's mounts."""
    return any(
        path == managed
        or managed.startswith(path + "/")
        or (managed not in OPEN_BELOW and path.startswith(managed + "/"))
        for managed in MANAGED_MOUNTS.values()
    )


class VolumeMount(ApiModel):
    """Where the engine container mounts one of spec.runtime.volumes."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [cel(_managed_path_rule(), MANAGED_PATH)]})

    name: str = Field(min_length=1, max_length=63, pattern=DNS_LABEL, description="Name of the volume.")
    mount_path: str = Field(
        max_length=1024,
        # In the schema only: the Python check says what is wrong in words.
        json_schema_extra={"pattern": MOUNT_PATH_PATTERN},
        description=f"Absolute path in the container; none of the operator's ({', '.join(MANAGED_MOUNTS.values())}).",
    )
    read_only: bool | None = Field(default=None, description="Mount it read-only.")
    sub_path: str | None = Field(
        default=None,
        max_length=1024,
        pattern=RELATIVE_PATH_PATTERN,
        description="Path inside the volume to mount (relative, without '..').",
    )

    @field_validator("mount_path")
    @classmethod
    def _check_path(cls, path: str) -> str:
        if not re.fullmatch(MOUNT_PATH_PATTERN, path):
            raise ValueError(f"{MOUNT_PATH_SYNTAX} (got {path!r})")
        if reaches_managed_path(path):
            raise ValueError(f"{MANAGED_PATH} (got {path})")
        return path


# Rules of the runtime spec over its volumes and mounts together.
VOLUME_RULES = [
    cel("!has(self.volumes) || self.volumes.all(a, self.volumes.exists_one(b, b.name == a.name))", DUPLICATE_VOLUME),
    cel(
        "!has(self.volumeMounts) || "
        "self.volumeMounts.all(a, self.volumeMounts.exists_one(b, b.mountPath == a.mountPath))",
        DUPLICATE_MOUNT,
    ),
    cel(
        "!has(self.volumeMounts) || "
        "self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))",
        UNKNOWN_VOLUME,
    ),
]
SYSTEM_PRIORITY_RULE = cel("!self.startsWith('system-')", SYSTEM_PRIORITY)


def volume_problems(volumes: list[Volume], mounts: list[VolumeMount]) -> list[str]:
    """What VOLUME_RULES refuse, named."""
    names = [volume.name for volume in volumes]
    paths = [mount.mount_path for mount in mounts]
    problems = [f"{DUPLICATE_VOLUME} (got {name} twice)" for name in sorted({n for n in names if names.count(n) > 1})]
    problems += [f"{DUPLICATE_MOUNT} (got {path} twice)" for path in sorted({p for p in paths if paths.count(p) > 1})]
    problems += [f"{UNKNOWN_VOLUME} (got {mount.name})" for mount in mounts if mount.name not in names]
    return problems


def check_priority_class(name: str | None) -> str | None:
    if name is not None and name.startswith("system-"):
        raise ValueError(f"{SYSTEM_PRIORITY} (got {name})")
    return name

"""API types of the SpecDecodeDeployment resource: the single source of truth for the CRD and the operator."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from specfleet.operator.api.base import ApiModel, cel
from specfleet.operator.api.pod_types import (
    MAX_VOLUMES,
    SYSTEM_PRIORITY_RULE,
    VOLUME_RULES,
    Affinity,
    LocalObjectReference,
    SubdomainName,
    Volume,
    VolumeMount,
    check_priority_class,
    volume_problems,
)
from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.api.quantity import (
    ACCELERATORS,
    EXTENDED_EQUAL,
    EXTENDED_WHOLE,
    GPU_RESOURCE,
    WHOLE_PATTERN,
    Quantity,
    resource_problems,
)
from specfleet.runtime.engine_flags import MAX_K
from specfleet.runtime.extra_args import (
    EXTRA_ARG_SYNTAX,
    EXTRA_ARG_SYNTAX_MESSAGE,
    MANAGED_FLAG_REACH,
    MANAGED_FLAGS_MESSAGE,
    extra_arg_problem,
)
from specfleet.runtime.health import HEALTH_PORT


class SpeculationMode(StrEnum):
    AUTO = "Auto"
    ON = "On"
    OFF = "Off"
    RECOMMEND = "Recommend"


class SpeculationMethod(StrEnum):
    EAGLE3 = "eagle3"
    DRAFT_MODEL = "draft_model"
    NGRAM = "ngram"
    MTP = "mtp"
    SUFFIX = "suffix"


# One message per rule, shared by the CRD's CEL rule and the Python check, so both say the same thing.
DRAFT_REQUIRED = "draftModel is required when method is eagle3 or draft_model"
DRAFT_REFUSED = "draftModel must not be set when method is ngram, suffix or mtp"
K_ABOVE_MAX = "numSpeculativeTokens must not exceed maxSpeculativeTokens"

# The name becomes the Deployment's and Service's name and a label value: a DNS-1035 label.
NAME_RULE = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63"
NAME_INVALID = (
    "metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, "
    "at most 63 characters): it names the Deployment, the Service and the pods' labels"
)
NAME_PATTERN = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

# The runtime's own settings (node arguments, health port, drain, control token) come from these variables.
RUNTIME_ENV_PREFIX = "SPECFLEET_"
RUNTIME_ENV = (
    f"env may not set {RUNTIME_ENV_PREFIX}* variables: they are the runtime's settings, which the operator manages"
)
PORT_COLLIDES = f"port must differ from {HEALTH_PORT}, the runtime's health port that the pod's probes use"


def _check_extra_arg(arg: str) -> str:
    problem = extra_arg_problem(arg)
    if problem:
        raise ValueError(problem)
    return arg


# One extra engine argument; the CEL rules on each item are the Python check's two regexes.
ExtraArg = Annotated[
    str,
    AfterValidator(_check_extra_arg),
    Field(
        max_length=4096,
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(f"self.matches('{EXTRA_ARG_SYNTAX}')", EXTRA_ARG_SYNTAX_MESSAGE),
                cel(f"!self.matches('{MANAGED_FLAG_REACH}')", MANAGED_FLAGS_MESSAGE),
            ]
        },
    ),
]

METHODS_NEEDING_DRAFT = frozenset({SpeculationMethod.EAGLE3, SpeculationMethod.DRAFT_MODEL})


# Bounds the CEL rules' cost over the maps, as the API server estimates it.
MAX_RESOURCES = 32


def _whole_rule() -> JsonDict:
    """Accelerators in a requests or limits map are whole numbers (the Python check covers every extended one)."""
    checks = [f"(!('{name}' in self) || string(self['{name}']).matches('{WHOLE_PATTERN}'))" for name in ACCELERATORS]
    return cel(" && ".join(checks), EXTENDED_WHOLE)


def _equal_rule() -> JsonDict:
    """An accelerator's request equals its limit; only nvidia.com/gpu may go without one (the operator sets it)."""

    def one(name: str) -> str:
        limited = f"has(self.limits) && '{name}' in self.limits"
        equal = f"string(self.requests['{name}']) == string(self.limits['{name}'])"
        return f"(!('{name}' in self.requests) || ({limited} ? {equal} : {str(name == GPU_RESOURCE).lower()}))"

    return cel("!has(self.requests) || (" + " && ".join(one(name) for name in ACCELERATORS) + ")", EXTENDED_EQUAL)


class ModelSpec(ApiModel):
    """The target model the fleet serves."""

    name: str = Field(
        description="Model to serve: a Hugging Face repository id or a path inside the pod.",
        min_length=1,
        max_length=253,
    )
    served_model_name: str | None = Field(
        default=None, description="Name clients use in requests; defaults to `name`.", max_length=253
    )
    tensor_parallel_size: int = Field(
        default=1,
        ge=1,
        le=64,
        description="GPUs per replica the model is sharded across (vLLM --tensor-parallel-size).",
    )
    data_parallel_size: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Engine data-parallel size; vLLM's batch-size→k table only takes effect when this is 1.",
    )
    max_model_len: int | None = Field(
        default=None, ge=16, le=10_000_000, description="Maximum context length (vLLM --max-model-len)."
    )
    size_billions: float | None = Field(
        default=None,
        ge=0.001,  # a million parameters: below it the prior's arithmetic meets subnormal floats, not models
        le=10_000,
        description=(
            "Parameter count in billions (0.001 to 10000); seeds the cost model's prior (else guessed from the name)."
        ),
    )


class SpeculationSpec(ApiModel):
    """How and whether the fleet speculates."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "!(self.method in ['eagle3', 'draft_model']) || has(self.draftModel)",
                    DRAFT_REQUIRED,
                ),
                cel(
                    "!(self.method in ['ngram', 'suffix', 'mtp']) || !has(self.draftModel)",
                    DRAFT_REFUSED,
                ),
                cel("self.numSpeculativeTokens <= self.maxSpeculativeTokens", K_ABOVE_MAX),
            ]
        }
    )

    mode: SpeculationMode = Field(
        default=SpeculationMode.AUTO,
        description=(
            "Auto: the operator decides on/off and k from live signals. On/Off: pinned. "
            "Recommend: decide and report in status and Events, change nothing."
        ),
    )
    method: SpeculationMethod = Field(
        description="Draft method: eagle3 (EAGLE-3 head), draft_model (small model), ngram, mtp, suffix.",
    )
    draft_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="Draft model or EAGLE head repository; required for eagle3 and draft_model, refused for ngram.",
    )
    num_speculative_tokens: int = Field(
        default=3,
        ge=1,
        le=MAX_K,
        description=(
            "Starting k: draft tokens proposed per verify step. Where the policy runs a batch-size→k table "
            "(Auto or On, schedule on), the pods start with that table instead."
        ),
    )
    max_speculative_tokens: int = Field(
        default=5,
        ge=1,
        le=MAX_K,
        description="Ceiling for k; the operator never proposes more draft tokens than this.",
    )

    @model_validator(mode="after")
    def _check_cross_fields(self) -> SpeculationSpec:
        method = SpeculationMethod(self.method)
        if method in METHODS_NEEDING_DRAFT and not self.draft_model:
            raise ValueError(DRAFT_REQUIRED)
        if method not in METHODS_NEEDING_DRAFT and self.draft_model:
            raise ValueError(DRAFT_REFUSED)
        if self.num_speculative_tokens > self.max_speculative_tokens:
            raise ValueError(f"{K_ABOVE_MAX} ({self.num_speculative_tokens} > {self.max_speculative_tokens})")
        return self


class SecretKeyRef(ApiModel):
    """A key in a Secret of the resource's namespace."""

    name: str = Field(description="Secret name.", min_length=1, max_length=253)
    key: str = Field(description="Key within the Secret.", min_length=1, max_length=253)


class ConfigMapKeySelector(ApiModel):
    """A key in a ConfigMap of the resource's namespace."""

    name: str = Field(description="ConfigMap name.", min_length=1, max_length=253)
    key: str = Field(description="Key within the ConfigMap.", min_length=1, max_length=253)


class EnvVarSource(ApiModel):
    """Where an environment variable's value comes from."""

    secret_key_ref: SecretKeyRef | None = Field(default=None, description="Value from a Secret key.")
    config_map_key_ref: ConfigMapKeySelector | None = Field(default=None, description="Value from a ConfigMap key.")


class EnvVar(ApiModel):
    """An environment variable for the engine container."""

    name: str = Field(description="Variable name.", pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$", max_length=253)
    value: str | None = Field(default=None, description="Literal value.", max_length=32768)
    value_from: EnvVarSource | None = Field(default=None, description="Value taken from a Secret or ConfigMap.")


class Toleration(ApiModel):
    """A pod toleration, as in core/v1."""

    key: str | None = Field(default=None, description="Taint key the toleration applies to.", max_length=317)
    operator: str | None = Field(default=None, description="Exists or Equal.", pattern=r"^(Exists|Equal)$")
    value: str | None = Field(default=None, description="Taint value to match.", max_length=63)
    effect: str | None = Field(
        default=None,
        description="NoSchedule, PreferNoSchedule or NoExecute.",
        pattern=r"^(NoSchedule|PreferNoSchedule|NoExecute)$",
    )
    toleration_seconds: int | None = Field(default=None, description="How long a NoExecute taint is tolerated.")


class ResourceRequirements(ApiModel):
    """Compute resources of the engine container."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [_equal_rule()]})

    requests: dict[str, Quantity] = Field(
        default_factory=dict,
        description="Minimum resources; at most the limit; an extended resource's equals its limit.",
        max_length=MAX_RESOURCES,
        json_schema_extra={"x-kubernetes-validations": [_whole_rule()]},
    )
    limits: dict[str, Quantity] = Field(
        default_factory=dict,
        description="Maximum resources; `nvidia.com/gpu` defaults to tensorParallelSize * dataParallelSize.",
        max_length=MAX_RESOURCES,
        json_schema_extra={"x-kubernetes-validations": [_whole_rule()]},
    )

    @model_validator(mode="after")
    def _check_quantities(self) -> ResourceRequirements:
        problems = resource_problems(self.requests, self.limits)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class RuntimeSpec(ApiModel):
    """The pods that run the engine."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(f"self.port != {HEALTH_PORT}", PORT_COLLIDES),
                cel(f"!has(self.env) || self.env.all(e, !e.name.startsWith('{RUNTIME_ENV_PREFIX}'))", RUNTIME_ENV),
                *VOLUME_RULES,
            ]
        }
    )

    # No schema default: the operator's configured runtime image applies whenever the spec names none.
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description=(
            "Runtime image (vLLM plus the specfleet runtime entrypoint); unset: the operator's "
            "(--runtime-image, the chart's runtimeImage), shown in status.runtimeImage."
        ),
    )
    image_pull_secrets: list[LocalObjectReference] = Field(
        default_factory=list, max_length=16, description="Secrets of the fleet's namespace to pull the image with."
    )
    image_pull_policy: str = Field(
        default="IfNotPresent", pattern=r"^(Always|IfNotPresent|Never)$", description="Image pull policy."
    )
    accelerator: str = Field(
        default="H100",
        max_length=63,
        description="GPU type (H100, H200, ...); selects the cost model's hardware profile.",
    )
    resources: ResourceRequirements = Field(
        default_factory=ResourceRequirements,
        description="Container resources (GPUs default to tensorParallelSize).",
    )
    env: list[EnvVar] = Field(
        default_factory=list,
        description=f"Extra environment variables; none named {RUNTIME_ENV_PREFIX}* (the runtime's own settings).",
        max_length=128,
    )
    node_selector: dict[str, str] = Field(default_factory=dict, description="Node labels the pods must match.")
    tolerations: list[Toleration] = Field(default_factory=list, description="Pod tolerations.", max_length=64)
    affinity: Affinity | None = Field(default=None, description="Node and pod affinity of the pods, as in core/v1.")
    priority_class_name: SubdomainName | None = Field(
        default=None,
        description="PriorityClass of the pods; not a system- class.",
        json_schema_extra={"x-kubernetes-validations": [SYSTEM_PRIORITY_RULE]},
    )
    runtime_class_name: SubdomainName | None = Field(
        default=None, description="RuntimeClass of the pods (e.g. nvidia), one the cluster admin defined."
    )
    service_account_name: SubdomainName | None = Field(
        default=None,
        description=(
            "ServiceAccount of the fleet's namespace the pods run as (default: the namespace's default); "
            "its cloud identity and pull secrets apply, no Kubernetes API token is mounted."
        ),
    )
    volumes: list[Volume] = Field(
        default_factory=list,
        max_length=MAX_VOLUMES,
        description=(
            "Extra volumes (persistentVolumeClaim, ephemeral, emptyDir, configMap, secret), e.g. a model cache; "
            "none named shm, tmp, cache or control-token (the operator's)."
        ),
    )
    volume_mounts: list[VolumeMount] = Field(
        default_factory=list,
        max_length=MAX_VOLUMES,
        description=(
            "Where the engine container mounts spec.runtime.volumes; not at, above or below the operator's "
            "mounts (/dev/shm, /tmp, /cache, /var/run/specfleet/control), except below /cache."
        ),
    )
    extra_args: list[ExtraArg] = Field(
        default_factory=list,
        max_length=128,
        description=(
            "Extra vLLM arguments, each `--name` or `--name=value`; none may reach a flag the operator manages "
            "(model, served name, parallelism, max-model-len, speculative-config, host, port, uds, middleware, "
            "config), also not by a prefix, a dotted key or `_` for `-`."
        ),
    )
    port: int = Field(
        default=8000,
        ge=1024,
        le=65535,
        description=f"Port the OpenAI-compatible server listens on; not {HEALTH_PORT}, the runtime's probe port.",
    )
    termination_grace_period_seconds: int = Field(
        default=120,
        ge=5,
        le=3600,
        description="Time a pod gets to drain in-flight requests before it is killed.",
    )
    startup_timeout_seconds: int = Field(
        default=1800,
        ge=30,
        le=14400,
        description="How long a pod may take to load the model before liveness applies.",
    )

    @field_validator("env")
    @classmethod
    def _check_env(cls, env: list[EnvVar]) -> list[EnvVar]:
        reserved = [var.name for var in env if var.name.startswith(RUNTIME_ENV_PREFIX)]
        if reserved:
            raise ValueError(f"{RUNTIME_ENV} (got {', '.join(reserved)})")
        return env

    @field_validator("port")
    @classmethod
    def _check_port(cls, port: int) -> int:
        if port == HEALTH_PORT:
            raise ValueError(f"{PORT_COLLIDES} (got {port})")
        return port

    @field_validator("priority_class_name")
    @classmethod
    def _check_priority_class(cls, name: str | None) -> str | None:
        return check_priority_class(name)

    @model_validator(mode="after")
    def _check_volumes(self) -> RuntimeSpec:
        problems = volume_problems(self.volumes, self.volume_mounts)
        if problems:
            raise ValueError("; ".join(problems))
        return self


# A Prometheus query may take this long at most: a longer deadline only holds a fleet's tick (and its
# source's concurrency) longer, never buys an answer.
MAX_PROMETHEUS_TIMEOUT_SECONDS = 30.0
SOURCE_OR_URL = "set at most one of source and url"
INLINE_ONLY = "bearerTokenSecretRef and insecureSkipVerify apply only to an inline url"
SOURCE_NAME_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"


class PrometheusSpec(ApiModel):
    """Which Prometheus this resource's signals come from: a source the cluster admin named, or (where the
    operator allows it) an inline URL."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel("!(has(self.source) && has(self.url))", SOURCE_OR_URL),
                cel(
                    "has(self.url) || (!has(self.bearerTokenSecretRef) && !(has(self.insecureSkipVerify) && "
                    "self.insecureSkipVerify))",
                    INLINE_ONLY,
                ),
            ]
        }
    )

    source: str | None = Field(
        default=None,
        pattern=SOURCE_NAME_PATTERN,
        max_length=63,
        description="Name of a Prometheus source in the operator's configuration (default: the source `default`).",
    )
    url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s]+$",
        max_length=2048,
        description="Inline Prometheus base URL; only where the operator allows inline URLs, to allowed hosts.",
    )
    bearer_token_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="Bearer token for the inline url: a Secret of this namespace labelled "
        "specfleet.dev/prometheus-credentials=true, sent only over https.",
    )
    insecure_skip_verify: bool = Field(default=False, description="Skip TLS verification of the inline url.")
    timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=MAX_PROMETHEUS_TIMEOUT_SECONDS,
        description="Per-query timeout; with a source, it can only shorten the source's own.",
    )

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError as exc:
            raise ValueError(f"url is not a valid URL: {exc}") from exc
        if not host:
            raise ValueError("url has no host")
        if parts.username is not None or parts.password is not None:
            raise ValueError("url must not carry credentials (user:password@); use bearerTokenSecretRef")
        return url

    @model_validator(mode="after")
    def _check_choice(self) -> PrometheusSpec:
        if self.source is not None and self.url is not None:
            raise ValueError(SOURCE_OR_URL)
        if self.url is None and (self.bearer_token_secret_ref is not None or self.insecure_skip_verify):
            raise ValueError(INLINE_ONLY)
        return self


class PolicyRef(ApiModel):
    """Reference to a SpeculationPolicy in the same namespace."""

    name: str = Field(description="Name of the SpeculationPolicy.", min_length=1, max_length=253)


class RolloutSpec(ApiModel):
    """How a restart-bound change rolls through the pods (the Deployment's RollingUpdate strategy)."""

    max_surge: int = Field(
        default=1,
        ge=0,
        le=1,
        description=(
            "Extra pods a rollout may start. 1 (needs a spare GPU node): each old pod serves until its "
            "replacement is Ready (maxUnavailable 0). 0 (no spare GPUs): one pod at a time is replaced "
            "(maxUnavailable 1), so the fleet runs a replica short while it rolls, and the policy makes no "
            "restart-bound change the other replicas could not carry at the forecast load."
        ),
    )

    @property
    def surge(self) -> bool:
        return self.max_surge > 0


class SpecDecodeDeploymentSpec(ApiModel):
    """Desired state of a speculative-decoding fleet."""

    replicas: int = Field(default=1, ge=0, le=1000, description="Number of engine pods (scale subresource).")
    model: ModelSpec = Field(description="The target model.")
    speculation: SpeculationSpec = Field(description="Speculation settings: method, draft, k bounds, mode.")
    policy: PolicySpec | None = Field(
        default=None, description="Inline policy; each set field overrides the referenced SpeculationPolicy."
    )
    policy_ref: PolicyRef | None = Field(default=None, description="SRE-owned SpeculationPolicy to follow.")
    runtime: RuntimeSpec = Field(default_factory=RuntimeSpec, description="Engine pods.")
    rollout: RolloutSpec = Field(default_factory=RolloutSpec, description="How restart-bound changes roll out.")
    prometheus: PrometheusSpec | None = Field(
        default=None, description="Prometheus connection; defaults to the operator's configuration."
    )


# ---------------------------------------------------------------- status


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


# metav1.Condition's validation, as apimachinery declares it (and controller-gen writes it into every CRD).
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_MESSAGE_MAX = 32768


# The apiserver's date-time as the operator writes it: a full date, a time with seconds, a zone (Z or ±hh:mm).
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII)


def _check_rfc3339(value: str) -> str:
    if not RFC3339.match(value):
        raise ValueError(f"{value!r} is not an RFC 3339 date-time such as 2026-01-02T15:04:05Z")
    return value


# A point in time as the API writes it (RFC 3339; `format: date-time` in the CRD).
Timestamp = Annotated[str, AfterValidator(_check_rfc3339), Field(json_schema_extra={"format": "date-time"})]


def _map_keyed_by_type(schema: JsonDict) -> None:
    """A list of conditions merges by type, as every Kubernetes API's conditions do."""
    schema.update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})


class Condition(ApiModel):
    """One aspect of the fleet's state, as metav1.Condition: type, status, reason, message, transition time."""

    type: str = Field(
        description="Condition type in CamelCase: Ready, Progressing, SpeculationActive, MetricsAvailable, Degraded.",
        pattern=CONDITION_TYPE_PATTERN,
        max_length=316,
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    observed_generation: int | None = Field(
        default=None, ge=0, description="Generation the condition was set for.", json_schema_extra={"format": "int64"}
    )
    last_transition_time: Timestamp = Field(description="When the status last changed (RFC 3339).")
    reason: str = Field(
        description="CamelCase reason for the condition's last transition.",
        min_length=1,
        max_length=1024,
        pattern=CONDITION_REASON_PATTERN,
    )
    message: str = Field(description="Human-readable detail; may be empty.", max_length=CONDITION_MESSAGE_MAX)


class ScheduleEntry(ApiModel):
    """One row of vLLM's batch-size→k table."""

    max_batch_size: int = Field(ge=1, description="Applies up to this many running sequences.")
    k: int = Field(ge=0, le=MAX_K, description="Draft tokens at that batch size.")


class LiveTableStatus(ApiModel):
    """How far the batch-size→k table the policy chose has reached the running pods (pushed live, no restart)."""

    revision: int = Field(ge=1, description="Live changes since the last restart-bound change, this one included.")
    table: list[list[int]] = Field(description="The table pushed, as vLLM's ranges [[first batch, last batch, k]].")
    applied_pods: int = Field(ge=0, description="Ready pods of the current configuration running this table.")
    ready_pods: int = Field(ge=0, description="Ready pods of the current configuration.")
    since: str = Field(description="When this revision was decided.")
    applied_at: str | None = Field(default=None, description="When every Ready pod first ran it.")
    message: str | None = Field(default=None, description="Pods that refused it or could not be reached, and why.")


class SpeculationState(ApiModel):
    """The speculation configuration the fleet runs (or, in Recommend mode, would run)."""

    enabled: bool = Field(description="Whether speculation is configured.")
    method: SpeculationMethod | None = Field(default=None, description="Draft method.")
    k: int | None = Field(default=None, ge=1, le=MAX_K, description="Draft tokens per step.")
    schedule: list[ScheduleEntry] | None = Field(default=None, description="Batch-size→k table, if rendered.")
    config_hash: str | None = Field(default=None, description="Hash of the rendered engine configuration.")
    since: str | None = Field(default=None, description="When this configuration was applied.")
    reason: str | None = Field(default=None, description="Why this configuration was chosen.")
    live_table: LiveTableStatus | None = Field(
        default=None, description="Where the table stands on the pods, when they take it live."
    )


class Evidence(ApiModel):
    """How much data backs one group of signals, so the policy can refuse to act on thin evidence."""

    pods: int = Field(ge=0, description="Pods whose series contributed in the window.")
    samples: float = Field(ge=0, description="Events counted in the window (verify rounds or completed requests).")


class SignalsEvidence(ApiModel):
    """Evidence per signal group; a group is unset when no pod reported its series."""

    acceptance: Evidence | None = Field(default=None, description="Behind acceptance length and a_i: verify rounds.")
    load: Evidence | None = Field(default=None, description="Behind QPS, concurrency, queue, KV cache: requests.")
    latency: Evidence | None = Field(default=None, description="Behind TPOT and TTFT: requests observed.")


class Signals(ApiModel):
    """Live signals measured over the last window."""

    window_seconds: float | None = Field(default=None, description="Evaluation window.")
    observed_at: str | None = Field(default=None, description="When the signals were read.")
    config_hash: str | None = Field(default=None, description="Configuration the signals were measured under.")
    acceptance_length: float | None = Field(default=None, description="Mean tokens per verify step (L).")
    acceptance_by_position: list[float] | None = Field(
        default=None, description="Unconditional acceptance a_i of draft position i."
    )
    draft_acceptance_rate: float | None = Field(default=None, description="Accepted ÷ proposed draft tokens.")
    qps: float | None = Field(default=None, description="Completed requests per second, fleet-wide.")
    prompt_tokens_per_output: float | None = Field(
        default=None, description="Prompt tokens admitted per generated token: the prefill the decode steps carry."
    )
    concurrency_per_replica: float | None = Field(default=None, description="Mean running requests per replica.")
    concurrency_p90: float | None = Field(default=None, description="p90 of running requests per replica.")
    waiting_requests: float | None = Field(default=None, description="Mean queued requests, fleet-wide.")
    tpot_seconds: float | None = Field(default=None, description="Mean per-request time per output token.")
    tpot_p50_seconds: float | None = Field(default=None, description="Median per-request TPOT.")
    tpot_p90_seconds: float | None = Field(default=None, description="p90 per-request TPOT.")
    ttft_p90_seconds: float | None = Field(default=None, description="p90 time to first token.")
    kv_cache_usage: float | None = Field(default=None, description="Mean KV-cache usage fraction.")
    pods: int | None = Field(default=None, description="Pods reporting in the window.")
    samples: int | None = Field(default=None, description="Samples backing the acceptance figures.")
    evidence: SignalsEvidence | None = Field(default=None, description="Data behind each signal group.")
    missing: list[str] | None = Field(
        default=None,
        description="Signal queries that failed this window (partial answer); their fields are unset.",
    )


class Decision(ApiModel):
    """One evaluation of the policy."""

    time: str = Field(description="When the decision was taken.")
    action: str = Field(description="hold, enable, disable, set-k, set-schedule, rollback.")
    k: int | None = Field(default=None, description="k after the decision.")
    applied: bool = Field(default=True, description="False in Recommend mode or while paused.")
    reason: str = Field(description="One-line explanation.")
    wants: str | None = Field(
        default=None,
        description="For a hold a stability gate imposed: the change it held back (e.g. 'disable to off').",
    )
    inputs: dict[str, float | int | str] = Field(
        default_factory=dict, description="Signals and predictions the decision used (unknown ones left out)."
    )

    @field_validator("inputs", mode="before")
    @classmethod
    def _drop_unknown_inputs(cls, value: Any) -> Any:
        return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value


class Recommendation(ApiModel):
    """The change Recommend mode advises, kept so its Event is posted once per advice (restarts included)."""

    action: str = Field(description="enable, disable, set-k, set-schedule or rollback.")
    target: str = Field(description="The configuration advised, e.g. `off`, `k=3` or `k≤4 by table`.")
    reason: str = Field(description="Why, as the policy first gave this advice.")
    since: Timestamp = Field(description="When this advice was first given.")


class SpeedupEstimate(ApiModel):
    """The fit's S(k,B): how much faster than no speculation k draft tokens decode at B sequences per replica."""

    k: int = Field(ge=1, le=MAX_K, description="Draft tokens per step.")
    batch: int = Field(ge=1, description="Running sequences per replica.")
    speedup: float = Field(description="Predicted speed-up over no speculation (above 1: k is faster).")
    std: float = Field(ge=0, description="Its standard deviation, from the fit's uncertainty of the step times.")


class SpecDecodeDeploymentStatus(ApiModel):
    """Observed state of the fleet."""

    model_config = ConfigDict(extra="ignore")

    observed_generation: int | None = Field(default=None, description="Generation last reconciled.")
    replicas: int = Field(default=0, description="Pods that exist.")
    ready_replicas: int = Field(default=0, description="Pods that are ready.")
    updated_replicas: int = Field(default=0, description="Pods running the current configuration.")
    selector: str | None = Field(default=None, description="Label selector of the pods (scale subresource).")
    runtime_image: str | None = Field(
        default=None, description="Image the pods run: spec.runtime.image, else the operator's --runtime-image."
    )
    mode: SpeculationMode | None = Field(default=None, description="Effective speculation mode.")
    speculation: SpeculationState | None = Field(default=None, description="Running speculation config.")
    last_good: SpeculationState | None = Field(
        default=None, description="Last configuration verified to perform as predicted (rollback target)."
    )
    signals: Signals | None = Field(default=None, description="Latest live signals.")
    decisions: list[Decision] = Field(default_factory=list, description="Most recent decisions, newest last.")
    recommendation: Recommendation | None = Field(
        default=None, description="Recommend mode: the change the policy advises; unset while it advises none."
    )
    speedup_belief: list[SpeedupEstimate] | None = Field(
        default=None,
        description="What the policy's fit believed at its last evaluation: S(k,B) per k at a few batch sizes, with "
        "its standard deviation; its decisions and Recommend mode's advice follow from it.",
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready, Progressing, SpeculationActive, MetricsAvailable and Degraded, one of each type.",
        json_schema_extra=_map_keyed_by_type,
    )
    policy_state: dict[str, Any] = Field(
        default_factory=dict,
        description="The policy's memory between evaluations (dwell timers, restart budget, calibration).",
    )

"""Operator configuration: environment variables, overridden by command-line flags. Pure parsing."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version

LOG_FORMATS = ("plain", "full", "json")
# The runtime image of this release (docs/images.md), whose engine-argument contract is the runtime wheel the
# operator carries and renders the pods' arguments with. The chart's runtimeImage value defaults to the same.
RUNTIME_IMAGE_REPOSITORY = "ghcr.io/specfleet/specfleet-runtime"
DEFAULT_RUNTIME_IMAGE = f"{RUNTIME_IMAGE_REPOSITORY}:{version('specfleet-runtime')}"
# The Dockerfile's `profiler` target of this release: `specfleet profile` for the SpeculationProfile Jobs.
PROFILER_IMAGE = f"ghcr.io/specfleet/specfleet-profiler:{version('specfleet')}"
# Not 9090, Prometheus's own port (an operator beside Prometheus, or `kubectl port-forward` to both, collided),
# nor 8080, the health port.
DEFAULT_METRICS_PORT = 8082
MAX_PORT = 65535


class ConfigError(ValueError):
    """A mistake in what the operator was told (a flag, a variable, a file, a port, the cluster to reach): the
    command line reports it in one line and exits with status 2."""


def one_line(exc: BaseException) -> str:
    """An error in one line: the file system's words, a YAML error's problem and line, else its first line."""
    if isinstance(exc, OSError) and exc.strerror:
        return str(exc.strerror)
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)  # yaml.MarkedYAMLError
    if problem and mark is not None:
        return f"not YAML: {problem} (line {mark.line + 1}, column {mark.column + 1})"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class OperatorConfig:
    """Everything the operator process is told from outside; every field has a documented default."""

    namespaces: tuple[str, ...] = ()  # empty: every namespace (cluster-wide)
    prometheus_url: str | None = None  # shorthand for a source named `default`; None: scrape the pods directly
    prometheus_sources: str | None = None  # path of the named Prometheus sources file (YAML)
    allow_inline_prometheus: bool = False  # whether a fleet may name its own spec.prometheus.url
    inline_prometheus_allow: tuple[str, ...] = ()  # networks and host names inline URLs may reach (empty: any)
    inline_prometheus_deny: tuple[str, ...] = ()  # networks and host names they never reach
    operator_namespace: str | None = None  # where the sources' Secrets live (the chart sets it)
    log_format: str = "plain"
    peering: str = "specfleet"
    standalone: bool = False  # True: no peering (a single replica, e.g. the embedded default)
    priority: int | None = None  # peering priority; None: random, so two replicas never tie (a tie runs both)
    kubeconfig: str | None = None  # None: in-cluster account, else KUBECONFIG / ~/.kube/config
    health_port: int = 8080
    metrics_port: int = DEFAULT_METRICS_PORT
    interval_seconds: float = 30.0
    runtime_image: str = DEFAULT_RUNTIME_IMAGE  # the engine pods' image where a fleet's spec.runtime.image is unset
    profiler_image: str = PROFILER_IMAGE  # the image of SpeculationProfile Jobs (`specfleet profile`)
    verbose: bool = False
    label_namespace: str = "namespace"
    label_deployment: str = "specfleet_dev_deployment"
    label_config_hash: str = "specfleet_dev_config_hash"
    label_pod: str = "pod"


ENV_PREFIX = "SPECFLEET_"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The operator's flags; each also reads SPECFLEET_<NAME> from the environment."""
    parser.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        help="Namespace to watch (repeatable; default: all). Env SPECFLEET_NAMESPACES (comma-separated).",
    )
    parser.add_argument(
        "--prometheus-url",
        help="Default Prometheus URL (default: scrape pods directly). Env SPECFLEET_PROMETHEUS_URL.",
    )
    parser.add_argument(
        "--prometheus-sources",
        help="YAML file of named Prometheus sources fleets pick with spec.prometheus.source. "
        "Env SPECFLEET_PROMETHEUS_SOURCES.",
    )
    parser.add_argument(
        "--allow-inline-prometheus",
        action="store_true",
        default=None,
        help="Let fleets name their own spec.prometheus.url (default off). Env SPECFLEET_ALLOW_INLINE_PROMETHEUS=1.",
    )
    parser.add_argument(
        "--inline-prometheus-allow",
        action="append",
        help="Network (CIDR) or host name (*.suffix) inline URLs may reach; repeatable (default: any but loopback, "
        "link-local, metadata). Env SPECFLEET_INLINE_PROMETHEUS_ALLOW (comma-separated).",
    )
    parser.add_argument(
        "--inline-prometheus-deny",
        action="append",
        help="Network or host name inline URLs never reach; repeatable. Env SPECFLEET_INLINE_PROMETHEUS_DENY.",
    )
    parser.add_argument(
        "--operator-namespace",
        help="The operator's own namespace, where sources' Secrets live. Env SPECFLEET_OPERATOR_NAMESPACE.",
    )
    parser.add_argument(
        "--log-format", choices=LOG_FORMATS, help="Log format (default plain). Env SPECFLEET_LOG_FORMAT."
    )
    parser.add_argument("--peering", help="Kopf peering name for HA (default specfleet). Env SPECFLEET_PEERING.")
    parser.add_argument(
        "--standalone",
        action="store_true",
        default=None,
        help="Run without peering. Env SPECFLEET_STANDALONE=1.",
    )
    parser.add_argument(
        "--priority", type=int, help="Peering priority (default: random per process). Env SPECFLEET_PRIORITY."
    )
    parser.add_argument(
        "--kubeconfig",
        help="Kubeconfig path (default: in-cluster, then KUBECONFIG). Env SPECFLEET_KUBECONFIG.",
    )
    parser.add_argument(
        "--health-port", type=int, help="Liveness endpoint port (default 8080; 0: none). Env SPECFLEET_HEALTH_PORT."
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        help=f"Operator metrics port (default {DEFAULT_METRICS_PORT}; 0: none). Env SPECFLEET_METRICS_PORT.",
    )
    parser.add_argument(
        "--interval",
        type=float,
        dest="interval_seconds",
        help="Evaluation interval in seconds (default 30). Env SPECFLEET_INTERVAL_SECONDS.",
    )
    parser.add_argument(
        "--runtime-image",
        help=f"Engine pods' image where a fleet's spec.runtime.image is unset (default {DEFAULT_RUNTIME_IMAGE}). "
        "Env SPECFLEET_RUNTIME_IMAGE.",
    )
    parser.add_argument(
        "--profiler-image",
        help=f"Image of the SpeculationProfile Jobs (default {PROFILER_IMAGE}). Env SPECFLEET_PROFILER_IMAGE.",
    )
    parser.add_argument("--verbose", action="store_true", default=None, help="Debug logging. Env SPECFLEET_VERBOSE=1.")


def config_from(env: Mapping[str, str], args: argparse.Namespace | None = None) -> OperatorConfig:
    """Defaults, then SPECFLEET_* environment variables, then flags."""
    values: dict[str, object] = {}
    _from_env(env, values)
    if args is not None:
        values.update({key: value for key, value in vars(args).items() if key in _FIELDS and value is not None})
    for listed in _LISTS:
        if listed in values:
            values[listed] = tuple(_split(values[listed]))
    config = OperatorConfig(**values)  # type: ignore[arg-type]
    if config.log_format not in LOG_FORMATS:
        raise ConfigError(f"log format {config.log_format!r} is not one of {', '.join(LOG_FORMATS)}")
    for flag, port in (("--health-port", config.health_port), ("--metrics-port", config.metrics_port)):
        if not 0 <= port <= MAX_PORT:
            raise ConfigError(f"{flag} {port}: a port is 0 (none) to {MAX_PORT}")
    if not config.interval_seconds > 0:
        raise ConfigError(f"--interval {config.interval_seconds:g}: the evaluation interval must be above 0 s")
    return config


_FIELDS = set(OperatorConfig.__dataclass_fields__)
_INTS = {"health_port", "metrics_port", "priority"}
_BOOLS = {"standalone", "verbose", "allow_inline_prometheus"}
_LISTS = ("namespaces", "inline_prometheus_allow", "inline_prometheus_deny")


def _from_env(env: Mapping[str, str], values: dict[str, object]) -> None:
    for name in _FIELDS:
        variable = ENV_PREFIX + name.upper()
        raw = env.get(variable)
        if raw is None or raw == "":
            continue
        if name in _BOOLS:
            values[name] = raw.lower() in {"1", "true", "yes"}
        elif name in _INTS or name == "interval_seconds":
            values[name] = _number(variable, raw, int if name in _INTS else float)
        else:
            values[name] = raw


def _number(variable: str, raw: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{variable}={raw!r} is not {'an integer' if kind is int else 'a number'}") from None


def _split(raw: object) -> list[str]:
    items: Sequence[str] = raw.split(",") if isinstance(raw, str) else list(raw)  # type: ignore[call-overload]
    return [item.strip() for piece in items for item in piece.split(",") if item.strip()]

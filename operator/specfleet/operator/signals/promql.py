"""PURE. PromQL for the whole fleet in one batch of queries, and the parsing of their answers.

Every query groups by the namespace, deployment and config-hash labels, so the number of queries per tick
is fixed whatever the fleet size; the current configuration of each deployment is picked afterwards.
Every label value placed in a query goes through `escape_string` (and `escape_regex` inside regexes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specfleet.operator.signals.model import (
    COUNTERS,
    GAUGE_STATS,
    GAUGES,
    HISTOGRAMS,
    PER_POSITION,
    ConfigKey,
    FleetTarget,
    LabelMapping,
    WindowStats,
)
from specfleet.operator.signals.rates import le_bound

# Beyond this many namespaces the namespace regex stops paying for its length; results are filtered anyway.
MAX_NAMESPACE_FILTER = 100
_REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$")


@dataclass(frozen=True)
class Query:
    """One instant query; `name` says how to read its rows (`counter:x`, `gauge:x`, `position`, ...)."""

    name: str
    promql: str


def escape_string(value: str) -> str:
    """`value` as the body of a double-quoted PromQL string: it cannot end the string or the selector."""
    out = []
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return "".join(out)


def escape_regex(value: str) -> str:
    """`value` as a literal inside an RE2 regex (Go's regexp.QuoteMeta)."""
    return "".join("\\" + char if char in _REGEX_SPECIAL else char for char in value)


def duration(seconds: float) -> str:
    """A PromQL range duration; milliseconds keep fractional windows exact."""
    return f"{max(1, round(seconds * 1000))}ms"


def fleet_matchers(targets: Sequence[FleetTarget], labels: LabelMapping) -> list[str]:
    """Matchers selecting the series of every managed pod the targets could own."""
    matchers = [f'{labels.deployment}!=""', f'{labels.config_hash}!=""']
    namespaces = sorted({target.namespace for target in targets})
    if 0 < len(namespaces) <= MAX_NAMESPACE_FILTER:
        alternatives = "|".join(escape_regex(namespace) for namespace in namespaces)
        matchers.append(f'{labels.namespace}=~"{escape_string(alternatives)}"')
    return matchers


def deployment_matchers(target: FleetTarget, labels: LabelMapping) -> list[str]:
    """Matchers selecting exactly one deployment's current configuration."""
    return [
        f'{labels.namespace}="{escape_string(target.namespace)}"',
        f'{labels.deployment}="{escape_string(target.name)}"',
        f'{labels.config_hash}="{escape_string(target.config_hash)}"',
    ]


def _selector(metric: str, matchers: Sequence[str]) -> str:
    # Prometheus 2.x may store `vllm:x` as `vllm_x` (OpenMetrics negotiation); match both spellings.
    return "{" + ", ".join([f'__name__=~"vllm[:_]{escape_regex(metric)}"', *matchers]) + "}"


def build_queries(matchers: Sequence[str], labels: LabelMapping, window_seconds: float) -> list[Query]:
    """The fixed set of queries of one evaluation tick."""
    group = ", ".join(labels.group)
    by_pod = f"{group}, {labels.pod}"
    window = duration(window_seconds)

    def rate(metric: str) -> str:
        return f"rate({_selector(metric, matchers)}[{window}])"

    queries = [Query(f"counter:{name}", f"sum by ({by_pod}) ({rate(metric)})") for name, metric in COUNTERS.items()]
    queries.append(Query("position", f"sum by ({group}, position) ({rate(PER_POSITION)})"))
    for name, metric in HISTOGRAMS.items():
        queries.append(Query(f"bucket:{name}", f"sum by ({group}, le) ({rate(metric)})"))
    for stat, gauge, q in GAUGE_STATS:
        series = f"{_selector(GAUGES[gauge], matchers)}[{window}]"
        over_time = f"avg_over_time({series})" if q is None else f"quantile_over_time({q}, {series})"
        queries.append(Query(f"gauge:{stat}", f"sum by ({by_pod}) ({over_time})"))
    queries.append(Query("pods_now", f"count by ({by_pod}) ({_selector(GAUGES['running'], matchers)})"))
    return queries


def parse_results(
    results: Mapping[str, Sequence[Mapping[str, Any]]], labels: LabelMapping
) -> dict[ConfigKey, WindowStats]:
    """Rows of answered queries (Prometheus `data.result` lists) grouped per deployment configuration.

    Rows without the grouping labels or with a value that is not a number are skipped; an answer that is
    not a list of rows raises ValueError (Prometheus, or whatever answered, sent garbage).
    """
    stats: dict[ConfigKey, WindowStats] = {}
    for name, rows in results.items():
        if not isinstance(rows, list):
            raise ValueError(f"query {name}: expected a list of series, got {type(rows).__name__}")
        for row in rows:
            parsed = _row(row, labels)
            if parsed is not None:
                key, metric, value = parsed
                _store(stats.setdefault(key, WindowStats()), name, metric, labels, value)
    if "pods_now" in results:
        # The question was answered: a configuration with no live pod now has none, not an unknown number.
        for window_stats in stats.values():
            window_stats.pods_now = window_stats.pods_now or set()
    return stats


def _row(row: Any, labels: LabelMapping) -> tuple[ConfigKey, Mapping[str, str], float] | None:
    if not isinstance(row, dict) or not isinstance(row.get("metric"), dict):
        raise ValueError("series without a metric label set")
    metric: dict[str, str] = row["metric"]
    value = row.get("value")
    try:
        key = (metric[labels.namespace], metric[labels.deployment], metric[labels.config_hash])
        number = float(value[1])  # type: ignore[index]
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return key, metric, number


def _store(stats: WindowStats, query: str, metric: Mapping[str, str], labels: LabelMapping, value: float) -> None:
    kind, _, name = query.partition(":")
    if kind == "counter":
        stats.counters.setdefault(name, {})[metric.get(labels.pod, "")] = value
    elif kind == "gauge":
        stats.gauges.setdefault(name, {})[metric.get(labels.pod, "")] = value
    elif kind == "pods_now":
        stats.pods_now = (stats.pods_now or set()) | {metric.get(labels.pod, "")}
    elif kind == "position" and metric.get("position", "").isdigit():
        stats.per_position[int(metric["position"])] = value
    elif kind == "bucket":
        bound = le_bound(metric.get("le"))
        if bound is not None:
            stats.buckets.setdefault(name, {})[bound] = value

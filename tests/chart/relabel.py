"""Prometheus target relabelling as prometheus-operator configures it, over plain data. PURE.

Enough of Prometheus' semantics to check a PodMonitor's relabelings: the kubernetes_sd meta labels of a pod,
and the `replace` action (regexes are fully anchored, `$1`/`${1}` expand groups, an empty result deletes
the target label). Other actions are refused rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_REGEX = "(.*)"


def sanitize(name: str) -> str:
    """How kubernetes_sd turns a Kubernetes label name into part of a Prometheus label name."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def pod_meta_labels(namespace: str, name: str, labels: Mapping[str, str]) -> dict[str, str]:
    """The discovery labels kubernetes_sd (role: pod) gives a pod's target."""
    meta = {"__meta_kubernetes_namespace": namespace, "__meta_kubernetes_pod_name": name}
    meta.update({f"__meta_kubernetes_pod_label_{sanitize(key)}": value for key, value in labels.items()})
    return meta


def relabel(labels: Mapping[str, str], configs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Apply prometheus-operator-style relabelings (camelCase keys)."""
    current = dict(labels)
    for config in configs:
        action = str(config.get("action", "replace")).lower()
        if action != "replace":
            raise NotImplementedError(f"relabel action {action!r}")
        regex = re.compile(f"^(?:{config.get('regex', DEFAULT_REGEX)})$")
        value = str(config.get("separator", ";")).join(current.get(name, "") for name in config.get("sourceLabels", []))
        _replace(current, regex, value, config)
    return current


def _expand(match: re.Match[str], template: str) -> str:
    return re.sub(r"\$\{?(\d+)\}?", lambda ref: match.group(int(ref.group(1))) or "", template)


def _replace(current: dict[str, str], regex: re.Pattern[str], value: str, config: Mapping[str, Any]) -> None:
    match = regex.match(value)
    if match is None:
        return
    target = _expand(match, str(config["targetLabel"]))
    result = _expand(match, str(config.get("replacement", "$1")))
    if result:
        current[target] = result
    else:
        current.pop(target, None)

"""Every pod the chart or the operator creates meets the restricted Pod Security Standard."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.chart.engines import engine_deployment
from tests.chart.helm import VALUE_SETS, render
from tests.chart.podsecurity import pod_spec_of, restricted_violations
from tests.examples import valid_examples


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_chart_workloads_are_restricted(value_set: str) -> None:
    workloads = [doc for doc in render(value_set) if pod_spec_of(doc) is not None]
    assert [doc["kind"] for doc in workloads] == ["Deployment", "Pod"]  # the operator, and `helm test`'s pod
    assert [problem for doc in workloads for problem in restricted_violations(doc)] == []


@pytest.mark.parametrize("example", valid_examples(), ids=lambda path: path.stem)
def test_engine_pods_the_operator_renders_are_restricted(example: Path) -> None:
    assert restricted_violations(engine_deployment(example)) == []


def _pod(manifest: dict[str, Any]) -> dict[str, Any]:
    spec = pod_spec_of(manifest)
    assert isinstance(spec, dict)
    return spec


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _pod(manifest)["containers"][0]
    return container


def _context(manifest: dict[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = _container(manifest)["securityContext"]
    return context


BREAKAGES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("privileged", lambda m: _context(m).update(privileged=True), "privileged"),
    ("escalation", lambda m: _context(m).pop("allowPrivilegeEscalation"), "allowPrivilegeEscalation"),
    ("root", lambda m: _context(m).update(runAsNonRoot=False), "runAsNonRoot"),
    ("uid0", lambda m: _context(m).update(runAsUser=0), "runAsUser is 0"),
    ("caps", lambda m: _context(m).update(capabilities={"drop": ["NET_RAW"]}), "drop ALL"),
    ("add", lambda m: _context(m).update(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]}), "SYS_ADMIN"),
    ("seccomp", lambda m: _context(m).update(seccompProfile={"type": "Unconfined"}), "Unconfined"),
    ("rwroot", lambda m: _context(m).update(readOnlyRootFilesystem=False), "readOnlyRootFilesystem"),
    ("hostnet", lambda m: _pod(m).update(hostNetwork=True), "hostNetwork"),
    ("hostpath", lambda m: _pod(m)["volumes"].append({"name": "h", "hostPath": {"path": "/"}}), "hostPath"),
    ("hostport", lambda m: _container(m)["ports"].append({"containerPort": 1, "hostPort": 1}), "hostPort"),
    (
        "sysctl",
        lambda m: _pod(m)["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
        "kernel.msgmax",
    ),
    (
        "init",
        lambda m: _pod(m).update(initContainers=[{"name": "init", "securityContext": {"privileged": True}}]),
        "container init: privileged",
    ),
]


@pytest.mark.parametrize(("breakage", "complaint"), [(b, c) for _, b, c in BREAKAGES], ids=[n for n, _, _ in BREAKAGES])
def test_check_reports_each_breakage(breakage: Callable[[dict[str, Any]], None], complaint: str) -> None:
    (deployment,) = [doc for doc in render() if doc["kind"] == "Deployment"]
    broken = copy.deepcopy(deployment)
    breakage(broken)
    problems = restricted_violations(broken)
    assert any(complaint in problem for problem in problems), problems


def test_pod_level_settings_are_inherited() -> None:
    (deployment,) = [doc for doc in render() if doc["kind"] == "Deployment"]
    moved = copy.deepcopy(deployment)
    context = _context(moved)
    _pod(moved)["securityContext"].update(
        runAsNonRoot=context.pop("runAsNonRoot"), seccompProfile=context.pop("seccompProfile")
    )
    assert restricted_violations(moved) == []
    _pod(moved)["securityContext"].pop("seccompProfile")
    assert restricted_violations(moved) == [
        f"Deployment/{deployment['metadata']['name']}: container operator: seccompProfile type is unset"
    ]


def test_kinds_without_pods_pass() -> None:
    assert restricted_violations({"kind": "ConfigMap", "metadata": {"name": "x"}}) == []

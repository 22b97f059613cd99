"""RBAC matches reality: the chart's roles grant every request the real operator makes, and little else."""

from __future__ import annotations

import copy
import dataclasses
import json
import pathlib
from typing import Any

import pytest

from specfleet.emulator import EmulatorServer, RecordedRequest
from specfleet.operator.config import config_from
from specfleet.operator.runner import BackgroundOperator
from specfleet.operator.signals.sources import SecretRef, parse_sources
from tests.chart.helm import NAMESPACE, of_kind, one, render
from tests.chart.rbac import (
    Grant,
    Need,
    assert_rbac_covers,
    excess,
    grants_of,
    need_of,
    needs_of,
    permits,
    scoped_rules,
    uncovered,
)
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, wait_for

# Grants the end-to-end run cannot exercise, and why each stays.
UNEXERCISED = {
    Grant("get", "", "secrets"): "named Prometheus sources' tokens, in the operator's namespace; no example uses one",
    Grant("get", "", "pods"): "direct scraping of engine pods when no Prometheus is set; the emulator runs no pods",
    Grant("list", "", "pods"): "direct scraping of engine pods when no Prometheus is set; the emulator runs no pods",
    Grant("watch", "", "pods"): "direct scraping of engine pods when no Prometheus is set; the emulator runs no pods",
    **{
        Grant("create", group, resource): "children are applied with Server-Side Apply: the request is a PATCH, "
        "and the API server also authorizes one that creates the object as create"
        for group, resource in (
            ("apps", "deployments"),
            ("", "services"),
            ("policy", "poddisruptionbudgets"),
            ("", "secrets"),  # the fleets' control Secrets
        )
    },
    Grant("delete", "", "pods"): "a pod that keeps refusing its live table is restarted; the emulator runs no pods",
    **{
        Grant(verb, "batch", "jobs"): "a profile's Job, once its engine pod is Ready; the emulator runs no pods "
        "(tests/demo/test_profile_job.py runs one with the demo's local fleet)"
        for verb in ("get", "create", "patch")
    },
    Grant("get", "specfleet.dev", "speculationpolicies"): "policyRef resolution by the policy loop",
    Grant("list", "specfleet.dev", "speculationpolicies"): "policyRef resolution by the policy loop",
    Grant("watch", "specfleet.dev", "speculationpolicies"): "policyRef resolution by the policy loop",
}


def _request(method: str, verb: str, group: str | None, resource: str | None, **extra: Any) -> RecordedRequest:
    fields: dict[str, Any] = {
        "query": {},
        "api_version": "v1",
        "subresource": None,
        "namespace": None,
        "name": None,
    }
    fields.update(extra)
    return RecordedRequest(
        method=method, path="/", verb=verb, api_group=group, resource=resource, content_type="", **fields
    )


def test_need_of_a_request() -> None:
    status = _request("PATCH", "patch", "specfleet.dev", "specdecodedeployments", subresource="status", namespace="a")
    assert need_of(status) == Need("patch", "specfleet.dev", "specdecodedeployments/status", "a")
    assert need_of(_request("GET", "list", "", "pods")) == Need("list", "", "pods", None)
    assert need_of(_request("GET", "get", None, None)) is None  # discovery


RULES = [
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["*"], "verbs": ["create"]},
]


def test_cluster_rules_grant_everywhere_role_rules_only_in_their_namespace() -> None:
    need = Need("get", "apps", "deployments", "a")
    assert uncovered([need], {None: RULES}) == set()
    assert uncovered([need], {"a": RULES}) == set()
    assert uncovered([need], {"b": RULES}) == {need}
    across = Need("list", "apps", "deployments", None)
    assert uncovered([across], {"a": RULES}) == {across}
    assert uncovered([Need("create", "", "events", "a")], {None: RULES}) == set()  # wildcard


def test_excess_names_what_no_request_used() -> None:
    used = [Need("get", "apps", "deployments", "a"), Need("create", "", "events", "a")]
    assert excess(used, {None: RULES}) == {(None, Grant("list", "apps", "deployments"))}
    assert excess(used, {"b": RULES}) == {
        ("b", grant)
        for grant in [
            Grant("get", "apps", "deployments"),
            Grant("list", "apps", "deployments"),
            Grant("create", "", "*"),
        ]
    }


def test_assert_rbac_covers_fails_on_missing_and_unexplained_grants() -> None:
    requests = [_request("GET", "get", "apps", "deployments", namespace="a")]
    with pytest.raises(AssertionError, match="do not grant: get apps/deployments in a"):
        assert_rbac_covers(requests, {"b": RULES})
    with pytest.raises(AssertionError, match="never used: create core/\\*"):
        assert_rbac_covers(requests, {None: RULES}, {Grant("list", "apps", "deployments"): "listed"})
    assert_rbac_covers(
        requests, {None: RULES}, {Grant("list", "apps", "deployments"): "x", Grant("create", "", "*"): "y"}
    )


class _Fleet:
    """One example SpecDecodeDeployment in the emulator, and reads of its objects."""

    def __init__(self, emulator: EmulatorServer, namespace: str) -> None:
        self.emulator, self.namespace = emulator, namespace
        self.name = str(load(EXAMPLES / "llama-8b-eagle3.yaml")["metadata"]["name"])

    def get(self, api_version: str, plural: str) -> dict[str, Any]:
        return self.emulator.get(api_version, plural, self.name, self.namespace) or {}

    def sdd(self) -> dict[str, Any]:
        return self.get("specfleet.dev/v1alpha1", "specdecodedeployments")

    def observed(self) -> bool:
        sdd = self.sdd()
        return bool(sdd) and sdd.get("status", {}).get("observedGeneration") == sdd["metadata"]["generation"]

    def pdb(self) -> dict[str, Any]:
        return self.get("policy/v1", "poddisruptionbudgets")

    def service_port(self) -> int:
        service = self.get("v1", "services")
        return int(service["spec"]["ports"][0]["port"]) if service else 0

    def posted_event(self) -> bool:
        return any(r.resource == "events" and r.namespace == self.namespace for r in self.emulator.requests)


def _exercise(emulator: EmulatorServer, namespace: str) -> None:
    """Drive every code path that writes: create, child status change, spec change, drift of a child."""
    fleet = _Fleet(emulator, namespace)
    emulator.apply(in_namespace(load(EXAMPLES / "sre-default-policy.yaml"), namespace))
    emulator.apply(in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace))
    # The create handler writes status when it returns; a child event handled before would be overwritten.
    wait_for(fleet.observed, what="the first status")
    deployment = fleet.get("apps/v1", "deployments")
    # Play the Deployment controller (the operator answers with a status patch of its resource) ...
    emulator.apply({**deployment, "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}})
    wait_for(lambda: fleet.sdd().get("status", {}).get("readyReplicas") == 2, what="status from the Deployment")
    # ... and an admin editing a child by hand, then a spec change (the sync patches every child).
    pdb = wait_for(fleet.pdb, what="the PDB")
    emulator.apply({**pdb, "spec": {**pdb["spec"], "maxUnavailable": 2}})
    changed = copy.deepcopy(fleet.sdd())
    changed["spec"]["runtime"]["port"] = 8001
    emulator.apply(changed)
    wait_for(lambda: fleet.service_port() == 8001, what="the Service patched to the new port")
    wait_for(lambda: fleet.pdb()["spec"]["maxUnavailable"] == 1, what="the PDB patched back")
    # A profile of the fleet whose prompts do not exist yet: it waits, Pending (its Job needs a Ready engine pod).
    profile = in_namespace(load(EXAMPLES / "llama-8b-profile.yaml"), namespace)
    emulator.apply(profile)
    profile_ref = ("specfleet.dev/v1alpha1", "speculationprofiles", profile["metadata"]["name"], namespace)
    wait_for(
        lambda: (emulator.get(*profile_ref) or {}).get("status", {}).get("phase") == "Pending", what="a Pending profile"
    )
    # Kopf posts Events from a queue of its own: let it drain before the operator stops.
    wait_for(fleet.posted_event, what="an Event")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["cluster-wide", "namespaced"])
def test_rendered_roles_grant_exactly_what_the_operator_does(
    emulator: EmulatorServer, kubeconfig: pathlib.Path, namespace: str, mode: str
) -> None:
    sets = [f"operator.peering.name=rbac-{namespace}"]
    if mode == "namespaced":
        sets.append(f"operator.watchNamespaces={{{namespace}}}")
    manifests = render(sets=sets)
    for peering in [*of_kind(manifests, "ClusterKopfPeering"), *of_kind(manifests, "KopfPeering")]:
        emulator.apply(dict(peering))
    (container,) = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    chart_config = config_from({var["name"]: var["value"] for var in container["env"] if "value" in var})
    config = dataclasses.replace(chart_config, kubeconfig=str(kubeconfig), health_port=0, metrics_port=0)

    before = len(emulator.requests)
    with BackgroundOperator(config):
        _exercise(emulator, namespace)
    requests = emulator.requests[before:]

    assert {need.resource for need in needs_of(requests)} >= {
        "deployments",
        "services",
        "poddisruptionbudgets",
    }
    assert_rbac_covers(requests, scoped_rules(manifests), UNEXERCISED)


def _secret_scopes(manifests: list[dict[str, Any]]) -> set[str | None]:
    """Where the rendered roles let the operator read Secrets (None: every namespace)."""
    return {
        scope
        for scope, rules in scoped_rules(manifests).items()
        if any(permits(grant, Need("get", "", "secrets", scope)) for grant in grants_of(rules))
    }


@pytest.mark.parametrize("mode", [(), ("operator.watchNamespaces={team-a,team-b}",)])
def test_secrets_are_read_only_in_the_operators_namespace_unless_the_admin_opts_in(mode: tuple[str, ...]) -> None:
    assert _secret_scopes(render(sets=mode)) == {NAMESPACE}
    assert _secret_scopes(render(sets=(*mode, "rbac.readSecrets=false"))) == set()
    tenants = {None} if not mode else {"team-a", "team-b"}
    assert _secret_scopes(render(sets=(*mode, "rbac.readTenantSecrets=true"))) == {NAMESPACE, *tenants}


def test_the_sources_the_chart_mounts_are_what_the_operator_parses(tmp_path: pathlib.Path) -> None:
    values = tmp_path / "sources.yaml"
    sources = [
        {"name": "platform", "url": "https://prometheus.monitoring.svc:9090", "timeoutSeconds": 5,
         "bearerTokenSecretRef": {"name": "prometheus-token", "key": "token"}},
        {"name": "team-b", "url": "http://prometheus.team-b.svc:9090", "maxConcurrency": 4},
    ]  # fmt: skip
    values.write_text(
        json.dumps({"prometheus": {"sources": sources, "inline": {"enabled": True, "allow": ["10.0.0.0/8"]}}})
    )
    manifests = render(files=[values])
    (config_map,) = [m for m in of_kind(manifests, "ConfigMap") if m["metadata"]["name"].endswith("prometheus-sources")]
    (container,) = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    env = {var["name"]: var.get("value") for var in container["env"]}
    config = config_from({k: v for k, v in env.items() if v is not None})
    mount = next(m for m in container["volumeMounts"] if m["name"] == "prometheus-sources")
    assert config.prometheus_sources == f"{mount['mountPath']}/prometheus-sources.yaml"
    assert (config.allow_inline_prometheus, config.inline_prometheus_allow) == (True, ("10.0.0.0/8",))
    parsed = parse_sources(config_map["data"]["prometheus-sources.yaml"], NAMESPACE)
    assert parsed["platform"].token == SecretRef(NAMESPACE, "prometheus-token", "token")
    assert (parsed["platform"].timeout_seconds, parsed["team-b"].max_concurrency) == (5, 4)
    assert not config_from({k: v for k, v in _default_env().items() if v is not None}).allow_inline_prometheus


def _default_env() -> dict[str, str | None]:
    (container,) = one(render(), "Deployment")["spec"]["template"]["spec"]["containers"]
    return {var["name"]: var.get("value") for var in container["env"]}

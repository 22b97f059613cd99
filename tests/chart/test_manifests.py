"""What `helm template` renders: valid Kubernetes 1.35 objects that run the operator as its code expects."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from specfleet.operator.api.parse import parse_spec
from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.config import OperatorConfig, config_from
from tests.chart.helm import (
    CHART,
    NAMESPACE,
    RELEASE,
    ROOT,
    VALUE_SETS,
    chart_metadata,
    chart_values,
    helm,
    of_kind,
    one,
    parse_manifests,
    render,
)
from tests.chart.validate import all_violations

STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
)


def _operator_container(manifests: list[dict[str, Any]]) -> Mapping[str, Any]:
    containers: list[Mapping[str, Any]] = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    (container,) = containers
    return container


def _config_of(container: Mapping[str, Any]) -> OperatorConfig:
    """The OperatorConfig the container's SPECFLEET_* environment yields, by the operator's own parser."""
    env = {var["name"]: var["value"] for var in container["env"] if "value" in var}
    return config_from(env)


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_manifests_pass_kubernetes_and_crd_schemas(value_set: str) -> None:
    assert all_violations(render(value_set, include_crds=True)) == []


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_every_object_carries_the_standard_labels(value_set: str) -> None:
    version = str(chart_metadata()["appVersion"])
    for manifest in render(value_set):
        labels = manifest["metadata"].get("labels", {})
        missing = [label for label in STANDARD_LABELS if label not in labels]
        assert not missing, f"{manifest['kind']}/{manifest['metadata']['name']} lacks {missing}"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/version"] == version


@pytest.mark.parametrize(
    ("sets", "suffix"),
    [
        ((), ":{app_version}"),
        (("image.tag=v9.9.9",), ":v9.9.9"),
        (("image.tag=v9.9.9", f"image.digest=sha256:{'a' * 64}"), f"@sha256:{'a' * 64}"),
    ],
)
def test_image_defaults_to_the_chart_app_version(sets: tuple[str, ...], suffix: str) -> None:
    expected = "ghcr.io/specfleet/specfleet-operator" + suffix.format(app_version=chart_metadata()["appVersion"])
    assert _operator_container(render(sets=sets))["image"] == expected


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_environment_is_the_configuration_the_values_describe(value_set: str) -> None:
    values = chart_values(value_set)
    operator = values["operator"]
    config = _config_of(_operator_container(render(value_set)))
    assert config.namespaces == tuple(operator["watchNamespaces"])
    assert config.prometheus_url == (operator["prometheusUrl"] or None)
    assert config.log_format == operator["logFormat"]
    assert config.verbose == operator["verbose"]
    assert config.interval_seconds == operator["intervalSeconds"]
    assert config.peering == (operator["peering"]["name"] or f"{RELEASE}-specfleet")
    assert config.standalone is False
    assert (config.health_port, config.metrics_port) == (operator["healthPort"], operator["metricsPort"])
    labels = operator["labels"]
    assert (config.label_namespace, config.label_pod) == (labels["namespace"], labels["pod"])
    assert (config.label_deployment, config.label_config_hash) == (labels["deployment"], labels["configHash"])


def test_default_label_mapping_is_the_operators_default() -> None:
    assert _config_of(_operator_container(render())) == OperatorConfig(
        log_format="json", peering=f"{RELEASE}-specfleet", standalone=False
    )


def _peering_names(release: str, sets: tuple[str, ...] = ()) -> list[str]:
    done = helm("template", release, str(CHART), "--namespace", NAMESPACE, *(f"--set={s}" for s in sets))
    assert done.returncode == 0, done.stderr
    manifests = parse_manifests(done.stdout)
    peerings = [*of_kind(manifests, "ClusterKopfPeering"), *of_kind(manifests, "KopfPeering")]
    assert {doc["metadata"]["name"] for doc in peerings} == {_config_of(_operator_container(manifests)).peering}
    return [doc["metadata"]["name"] for doc in peerings]


@pytest.mark.parametrize("sets", [(), ("operator.watchNamespaces={team-a}",)])
def test_each_release_peers_in_its_own_peering(sets: tuple[str, ...]) -> None:
    """Two releases in one cluster (the second watching other namespaces, or a staging copy) must not meet in
    one peering: Kopf would keep one active across both, and the other release's fleets unserved."""
    first, second = _peering_names("first", sets), _peering_names("second", sets)
    assert len(first) == len(second) == 1
    assert first != second
    assert _peering_names("first", (*sets, "operator.peering.name=shared")) == ["shared"]


def test_probes_and_ports_reach_the_operator() -> None:
    manifests = render()
    container = _operator_container(manifests)
    config = _config_of(container)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"health": config.health_port, "metrics": config.metrics_port}
    for probe in ("livenessProbe", "readinessProbe"):
        # Kopf serves its liveness endpoint at /healthz (specfleet.operator.runner.operate).
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    service = one(manifests, "Service")
    assert [port["targetPort"] for port in service["spec"]["ports"]] == ["metrics"]
    pod_labels = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_two_replicas_peer_cluster_wide_by_default() -> None:
    manifests = render()
    assert one(manifests, "Deployment")["spec"]["replicas"] == 2
    peering = one(manifests, "ClusterKopfPeering")
    assert peering["metadata"]["name"] == _config_of(_operator_container(manifests)).peering
    assert of_kind(manifests, "KopfPeering") == []
    assert one(manifests, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_peering_crds_are_the_ones_kopf_looks_for() -> None:
    from kopf._cogs.structs import references

    path = CHART / "crds" / "kopf-peering.yaml"
    for crd in yaml.safe_load_all(path.read_text()):
        names, namespaced = crd["spec"]["names"], crd["spec"]["scope"] == "Namespaced"
        selector = references.NAMESPACED_PEERINGS_K if namespaced else references.CLUSTER_PEERINGS_K
        for version in crd["spec"]["versions"]:
            resource = references.Resource(
                group=crd["spec"]["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=namespaced,
            )
            assert selector.check(resource), f"Kopf does not look for {resource}"


def test_namespaced_mode_uses_roles_and_peerings_in_each_namespace() -> None:
    watched = chart_values("namespaced")["operator"]["watchNamespaces"]
    manifests = render("namespaced")
    assert of_kind(manifests, "ClusterKopfPeering") == []
    assert sorted(doc["metadata"]["namespace"] for doc in of_kind(manifests, "KopfPeering")) == sorted(watched)
    for kind in ("Role", "RoleBinding"):
        # One per watched namespace, and the release namespace's for the Prometheus sources' Secrets.
        assert sorted(doc["metadata"]["namespace"] for doc in of_kind(manifests, kind)) == sorted([*watched, NAMESPACE])
    cluster_resources = {resource for rule in one(manifests, "ClusterRole")["rules"] for resource in rule["resources"]}
    assert "specdecodedeployments" not in cluster_resources
    for binding in [*of_kind(manifests, "RoleBinding"), *of_kind(manifests, "ClusterRoleBinding")]:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": f"{RELEASE}-specfleet", "namespace": NAMESPACE}
        ]


def test_cluster_mode_binds_one_cluster_role() -> None:
    manifests = render()
    # The only Role: reading Secrets in the release namespace (the Prometheus sources' credentials).
    assert [(r["metadata"]["namespace"], r["rules"]) for r in of_kind(manifests, "Role")] == [
        (NAMESPACE, [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
    ]
    assert [b["roleRef"]["name"] for b in of_kind(manifests, "RoleBinding")] == [f"{RELEASE}-specfleet-secrets"]
    binding = one(manifests, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == one(manifests, "ClusterRole")["metadata"]["name"]
    assert binding["subjects"][0]["name"] == one(manifests, "ServiceAccount")["metadata"]["name"]
    assert (
        one(manifests, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == binding["subjects"][0]["name"]
    )


def test_secrets_are_readable_cluster_wide_only_when_asked() -> None:
    def reads_secrets(sets: tuple[str, ...]) -> bool:
        rules = one(render(sets=sets), "ClusterRole")["rules"]
        # Applying the fleets' control Secrets (create, patch) is not reading any.
        return any("secrets" in rule["resources"] and "get" in rule["verbs"] for rule in rules)

    assert not reads_secrets(())  # the operator's own namespace only (tests/chart/test_rbac.py)
    assert reads_secrets(("rbac.readTenantSecrets=true",))


@pytest.mark.parametrize("value_set", ["all-enabled", "namespaced"])
def test_default_policy_is_a_valid_speculationpolicy(value_set: str) -> None:
    policies = of_kind(render(value_set), "SpeculationPolicy")
    expected = chart_values(value_set)["operator"]["watchNamespaces"] or [NAMESPACE]
    assert sorted(policy["metadata"]["namespace"] for policy in policies) == sorted(expected)
    for policy in policies:
        PolicySpec.model_validate(policy["spec"])


def test_notes_show_a_valid_first_specdecodedeployment() -> None:
    result = helm(
        "install",
        RELEASE,
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--dry-run=client",
        "--set",
        "defaultPolicy.create=true",
    )
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    match = re.search(r"cat <<'YAML' \| kubectl apply -f -\n(.*?)\n\s*YAML\n", notes, re.DOTALL)
    assert match, notes
    resource = yaml.safe_load(textwrap.dedent(match.group(1)))
    assert resource["kind"] == "SpecDecodeDeployment"
    spec = parse_spec(resource["spec"])
    assert spec.policy_ref is not None
    assert spec.policy_ref.name == "sre-default"


def _notes(*sets: str) -> tuple[str, list[dict[str, Any]]]:
    """(NOTES.txt as `helm install` prints it, the manifests it installs)."""
    args = ["install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client", *sets]
    result = helm(*args)
    assert result.returncode == 0, result.stderr
    manifest, notes = result.stdout.split("NOTES:", 1)
    return notes, parse_manifests(manifest.split("MANIFEST:", 1)[1])


@pytest.mark.parametrize("sets", [(), ("--set", "fullnameOverride=fleet-ops")])
def test_notes_commands_name_what_the_release_installed(sets: tuple[str, ...]) -> None:
    notes, manifests = _notes(*sets)
    commands = [line.split("#")[0].strip() for line in notes.splitlines() if re.match(r"\s+(kubectl|helm) ", line)]
    assert not [command for command in commands if re.search(r"<\w+>", command)], "placeholder in NOTES"
    deployment = one(manifests, "Deployment")
    pods = deployment["spec"]["template"]["metadata"]["labels"]
    for command in commands:
        if command.startswith("kubectl -n"):
            assert command.split()[2] in {NAMESPACE, "default"}, command
        for name in re.findall(r"deployment/(\S+)", command):
            assert name == deployment["metadata"]["name"], command
        for selector in re.findall(r" -l (\S+)", command):
            assert dict(term.split("=") for term in selector.split(",")).items() <= pods.items(), command
    assert "kubectl get sdd -A" in commands
    assert f"helm test {RELEASE} -n {NAMESPACE}" in commands
    upgrade = f"helm upgrade {RELEASE} charts/specfleet -n {NAMESPACE} --reset-then-reuse-values"
    assert upgrade in commands
    assert "helm show crds charts/specfleet | kubectl apply --server-side -f -" in commands


def test_notes_point_at_docs_that_exist() -> None:
    notes, _ = _notes()
    listed = re.findall(r"^\s+((?:charts|docs|examples)/\S*)", notes, re.MULTILINE)
    assert {"charts/specfleet/README.md", "docs/helm.md", "docs/runbooks.md"} <= set(listed)
    assert [path for path in listed if not (ROOT / path).exists()] == []
    assert chart_metadata()["home"] in notes

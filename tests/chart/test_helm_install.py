"""The README's install path end to end, against the emulator with the real helm and kubectl: `helm install` of
the chart, the real operator started with the configuration that install rendered (its Deployment's env)
reconciling the README's example fleet, `helm test`, `helm upgrade --reset-then-reuse-values`, and
`helm uninstall`."""

from __future__ import annotations

import contextlib
import json
import pathlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import GROUP, SDD_PLURAL, VERSION
from tests.chart.helm import CHART, helm, parse_manifests
from tests.examples import EXAMPLES, load
from tests.fixtures.deps import require_binary
from tests.fixtures.operator import in_namespace, wait_for
from tests.reliability.process import OperatorProcess

RELEASE = "e2e"
NAMESPACE = "helm-e2e"
FLEETS = "helm-e2e-fleets"
OPERATOR = f"{RELEASE}-specfleet"
TEST_RELEASE, TEST_NAMESPACE, TEST_FLEETS = "hooks", "helm-hooks", "helm-hooks-fleets"  # `helm test`'s own
README_EXAMPLES = ("sre-default-policy.yaml", "llama-8b-eagle3.yaml")  # what the README applies after install
SDD_API = f"{GROUP}/{VERSION}"


def _helm(kubeconfig: pathlib.Path, *args: str, namespace: str = NAMESPACE) -> str:
    done = helm(*args, "--namespace", namespace, "--kubeconfig", str(kubeconfig))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _kubectl(kubeconfig: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [require_binary("kubectl"), f"--kubeconfig={kubeconfig}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def _existing(kubeconfig: pathlib.Path, manifest: pathlib.Path) -> list[str]:
    """`kind/name` of each object of a manifest file that the cluster has."""
    done = _kubectl(kubeconfig, "get", "-f", str(manifest), "--ignore-not-found", "-o", "name")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _env(deployment: dict[str, Any]) -> dict[str, str]:
    """The operator container's environment as a pod would see it (fieldRefs resolved for one pod)."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    namespace = deployment["metadata"]["namespace"]
    fields = {"metadata.name": f"{deployment['metadata']['name']}-0", "metadata.namespace": namespace}
    env = {}
    for var in container.get("env", []):
        reference = (var.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        env[var["name"]] = fields[reference] if reference else var.get("value", "")
    return env


def _release_secrets(emulator: EmulatorServer) -> dict[str, str]:
    names = [f"sh.helm.release.v1.{RELEASE}.v{revision}" for revision in (1, 2)]
    found = {name: emulator.get("v1", "secrets", name, NAMESPACE) for name in names}
    return {name: secret["metadata"]["labels"]["status"] for name, secret in found.items() if secret}


@contextlib.contextmanager
def _installed(kubeconfig: pathlib.Path, release: str, namespace: str, *sets: str) -> Iterator[None]:
    """`helm install --create-namespace` of the chart; uninstalled at the end whatever the test did."""
    _helm(kubeconfig, "install", release, str(CHART), "--create-namespace", *sets, namespace=namespace)
    try:
        yield
    finally:
        helm("uninstall", release, "--namespace", namespace, "--kubeconfig", str(kubeconfig), "--ignore-not-found")


@pytest.mark.slow
def test_helm_install_of_the_default_values_creates_every_rendered_object(
    kubeconfig: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Cluster-wide, as the chart's defaults are: ClusterRole, ClusterRoleBinding, ClusterKopfPeering, ..."""
    release, namespace = "defaults", "helm-defaults"
    manifest = tmp_path / "manifest.yaml"
    with _installed(kubeconfig, release, namespace):
        manifest.write_text(_helm(kubeconfig, "get", "manifest", release, namespace=namespace))
        rendered = parse_manifests(manifest.read_text())
        kinds = {doc["kind"] for doc in rendered}
        assert {"ClusterRole", "ClusterRoleBinding", "ClusterKopfPeering", "Deployment", "Service"} <= kinds
        assert len(_existing(kubeconfig, manifest)) == len(rendered)
        assert "STATUS: deployed" in _helm(kubeconfig, "status", release, namespace=namespace)
    assert _existing(kubeconfig, manifest) == []


@pytest.mark.slow
def test_helm_install_operate_upgrade_uninstall(
    emulator: EmulatorServer, kubeconfig: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Watching one namespace of fleets, so the operator this test starts leaves the session's others alone."""
    emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLEETS}})
    manifest = tmp_path / "manifest.yaml"
    with _installed(kubeconfig, RELEASE, NAMESPACE, "--set", f"operator.watchNamespaces={{{FLEETS}}}"):
        assert _release_secrets(emulator) == {f"sh.helm.release.v1.{RELEASE}.v1": "deployed"}
        manifest.write_text(_helm(kubeconfig, "get", "manifest", RELEASE))
        rendered = parse_manifests(manifest.read_text())
        assert {"Deployment", "ServiceAccount", "Role", "RoleBinding", "KopfPeering"} <= {d["kind"] for d in rendered}
        assert len(_existing(kubeconfig, manifest)) == len(rendered)
        _operate_the_readme_fleet(emulator, kubeconfig, tmp_path / "operator.log")

        _helm(kubeconfig, "upgrade", RELEASE, str(CHART), "--reset-then-reuse-values", "--set", "operator.verbose=true")
        upgraded = emulator.get("apps/v1", "deployments", OPERATOR, NAMESPACE)
        assert upgraded is not None
        assert (_env(upgraded)["SPECFLEET_VERBOSE"], _env(upgraded)["SPECFLEET_NAMESPACES"]) == ("true", FLEETS)
        assert _release_secrets(emulator) == {
            f"sh.helm.release.v1.{RELEASE}.v1": "superseded",
            f"sh.helm.release.v1.{RELEASE}.v2": "deployed",
        }

        assert f'release "{RELEASE}" uninstalled' in _helm(kubeconfig, "uninstall", RELEASE)
        assert _release_secrets(emulator) == {}
        assert _existing(kubeconfig, manifest) == []
        for crd in (f"{SDD_PLURAL}.{GROUP}", "kopfpeerings.kopf.dev"):  # Helm never deletes what crds/ installed
            assert emulator.get("apiextensions.k8s.io/v1", "customresourcedefinitions", crd) is not None


def _operate_the_readme_fleet(emulator: EmulatorServer, kubeconfig: pathlib.Path, log: pathlib.Path) -> None:
    """`specfleet operator` with the installed Deployment's environment (the kubeconfig stands in for the pod's
    service account, free ports for its container ports) reconciles the README's fleet."""
    deployment = emulator.get("apps/v1", "deployments", OPERATOR, NAMESPACE)
    assert deployment is not None
    env = _env(deployment)
    assert (env["SPECFLEET_NAMESPACES"], env["SPECFLEET_STANDALONE"]) == (FLEETS, "false")
    interval = float(env["SPECFLEET_INTERVAL_SECONDS"])
    with OperatorProcess(kubeconfig, log, interval=interval, extra=(), env=env) as operator:
        for example in README_EXAMPLES:
            emulator.apply(in_namespace(load(EXAMPLES / example), FLEETS))
        name = load(EXAMPLES / README_EXAMPLES[-1])["metadata"]["name"]

        def reconciled() -> bool:
            assert operator.alive(), f"the operator exited; its log:\n{operator.log()[-4000:]}"
            fleet = emulator.get(SDD_API, SDD_PLURAL, name, FLEETS) or {"metadata": {}}
            observed = (fleet.get("status") or {}).get("observedGeneration")
            child = emulator.get("apps/v1", "deployments", name, FLEETS)
            return child is not None and observed == fleet["metadata"].get("generation")

        wait_for(reconciled, timeout=120, what=lambda: f"the fleet reconciled; operator log:\n{operator.log()[-4000:]}")
        assert operator.crash_lines() == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_test_pod(emulator: EmulatorServer, kubeconfig: pathlib.Path, pod: str, routes: dict[str, str]) -> str:
    """What the kubelet and kube-proxy would do with `helm test`'s pod, since the emulator runs no pods: its
    container's command runs here (this environment's python3 standing in for the image's), with each Service
    address it names (`<service>.<namespace>.svc:<port>`) routed to where that Service's pods listen; then the
    pod's phase says how it ended, which is what `helm test` waits for. Returns the command's output."""
    found = wait_for(lambda: emulator.get("v1", "pods", pod, TEST_NAMESPACE), timeout=30, what=f"the pod {pod}")
    (container,) = found["spec"]["containers"]
    command: list[str] = [*container["command"], *container.get("args", [])]
    program, args = command[0], command[1:]
    assert program == "python3"
    for service, local in routes.items():
        assert any(service in arg for arg in args), f"{pod} does not reach {service}: {args}"
        args = [arg.replace(service, local) for arg in args]
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=90, check=False)
    status = {"status": {"phase": "Succeeded" if done.returncode == 0 else "Failed"}}
    patched = _kubectl(kubeconfig, "-n", TEST_NAMESPACE, "patch", "pod", pod, "--type=merge", "-p", json.dumps(status))
    assert patched.returncode == 0, patched.stderr
    return done.stdout + done.stderr


def _helm_test(emulator: EmulatorServer, kubeconfig: pathlib.Path, routes: dict[str, str]) -> tuple[int, str, str]:
    """(`helm test`'s exit status, its output, the test pod's output)."""
    command = [require_binary("helm"), "test", TEST_RELEASE, "-n", TEST_NAMESPACE, f"--kubeconfig={kubeconfig}"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as helm_test:
        pod_output = _run_test_pod(emulator, kubeconfig, f"{TEST_RELEASE}-specfleet-test-metrics", routes)
        output, _ = helm_test.communicate(timeout=60)
    return helm_test.returncode, output, pod_output


@pytest.mark.slow
def test_helm_test_passes_against_the_operator_and_fails_against_something_else(
    emulator: EmulatorServer, kubeconfig: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """`helm test` asks the operator's metrics Service for the operator's metrics: behind the Service, a server
    with other metrics fails it (the pod stays for `kubectl logs`); the installed operator passes it."""
    emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEST_FLEETS}})
    with _installed(kubeconfig, TEST_RELEASE, TEST_NAMESPACE, "--set", f"operator.watchNamespaces={{{TEST_FLEETS}}}"):
        service = emulator.get("v1", "services", f"{TEST_RELEASE}-specfleet-metrics", TEST_NAMESPACE)
        deployment = emulator.get("apps/v1", "deployments", f"{TEST_RELEASE}-specfleet", TEST_NAMESPACE)
        assert service is not None
        assert deployment is not None
        (port,) = service["spec"]["ports"]
        assert port["targetPort"] == "metrics"
        address = f"{service['metadata']['name']}.{TEST_NAMESPACE}.svc:{port['port']}"

        other, registry = _free_port(), CollectorRegistry()
        Gauge("unrelated_up", "Not the operator.", registry=registry).set(1)
        server, _ = start_http_server(other, addr="127.0.0.1", registry=registry)
        try:
            status, output, pod_output = _helm_test(emulator, kubeconfig, {address: f"127.0.0.1:{other}"})
        finally:
            server.shutdown()
        assert (status != 0, "Phase:          Failed" in output) == (True, True), output
        assert "serves 0 specfleet metrics" in pod_output, pod_output
        assert emulator.get("v1", "pods", f"{TEST_RELEASE}-specfleet-test-metrics", TEST_NAMESPACE) is not None

        metrics = _free_port()
        env = _env(deployment)
        with OperatorProcess(kubeconfig, tmp_path / "operator.log", metrics_port=metrics, extra=(), env=env):
            status, output, pod_output = _helm_test(emulator, kubeconfig, {address: f"127.0.0.1:{metrics}"})
        assert (status, "Phase:          Succeeded" in output) == (0, True), output + pod_output
        assert "specfleet_evaluation_duration_seconds" in pod_output, pod_output
        # hook-delete-policy: a passed test leaves no pod behind.
        assert emulator.get("v1", "pods", f"{TEST_RELEASE}-specfleet-test-metrics", TEST_NAMESPACE) is None

"""The real kubectl binary against the emulator: apply (validated on the server), get, patch, scale, wait,
namespaces, explain."""

from __future__ import annotations

import pathlib
import subprocess

import pytest
import yaml

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.types import SpecDecodeDeploymentSpec, SpeculationSpec
from tests.emulator.conftest import Kubectl, kubectl_fails
from tests.emulator.widgets import widget, widget_crd
from tests.fixtures.deps import require_binary

CRDS = pathlib.Path(__file__).parents[2] / "crds"


@pytest.fixture
def manifests(tmp_path: pathlib.Path, kubectl: Kubectl) -> pathlib.Path:
    """The Widget CRD applied with kubectl (first, as on a real cluster), and a widget's manifest."""
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(widget_crd()))
    kubectl("apply", "-f", str(crd))
    path = tmp_path / "widget.yaml"
    path.write_text(yaml.safe_dump(widget("kw", replicas=2)))
    return path


def test_apply_get_patch_scale_wait(
    kubectl: Kubectl, manifests: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    assert "widget.test.dev/kw created" in kubectl("apply", "-f", str(manifests))
    header, row = kubectl("get", "widgets").splitlines()
    assert header.split() == ["NAME", "REPLICAS", "MODE", "READY", "AGE"]
    assert row.split()[:3] == ["kw", "2", "Auto"]
    kubectl("patch", "wd", "kw", "--type=merge", "-p", '{"spec":{"mode":"On"}}')
    kubectl("scale", "wd/kw", "--replicas=3")
    kubectl(
        "patch",
        "wd",
        "kw",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
    )
    kubectl("wait", "--for=jsonpath={.status.conditions[0].status}=True", "wd/kw", "--timeout=10s")
    stored = emulator.get("test.dev/v1", "widgets", "kw", ns)
    assert stored is not None
    assert (stored["spec"]["replicas"], stored["spec"]["mode"]) == (3, "On")
    assert "configured" in kubectl("apply", "-f", str(manifests))
    assert kubectl("get", "wd", "kw", "-o", "jsonpath={.spec.replicas} {.metadata.generation}") == "2 4"


def test_server_side_apply_and_delete(
    kubectl: Kubectl, manifests: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    kubectl("apply", "--server-side", "-f", str(manifests))
    assert emulator.get("test.dev/v1", "widgets", "kw", ns) is not None
    kubectl("delete", "widget", "kw")
    assert emulator.get("test.dev/v1", "widgets", "kw", ns) is None


def test_wait_for_crd_established_and_get_namespaces(kubectl: Kubectl, manifests: pathlib.Path, ns: str) -> None:
    kubectl("wait", "--for=condition=established", "crd/widgets.test.dev", "--timeout=10s")
    names = [line.split()[0] for line in kubectl("get", "namespaces").splitlines()[1:]]
    assert {"default", "kube-system", ns} <= set(names)


def test_invalid_resource_is_refused_with_the_apiserver_message(
    kubeconfig: pathlib.Path, tmp_path: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    emulator.apply(widget_crd())
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(widget("kbad", replicas=1, speculation={"k": 9, "maxK": 2})))
    done = subprocess.run(
        [
            require_binary("kubectl"),
            f"--kubeconfig={kubeconfig}",
            f"--cache-dir={tmp_path}",
            "-n",
            ns,
            "apply",
            "-f",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert (
        'The Widget "kbad" is invalid: spec.speculation: Invalid value: "object": k must not exceed maxK' in done.stderr
    )


def test_unknown_fields_are_refused_by_default_and_pruned_without_validation(
    kubectl: Kubectl, manifests: pathlib.Path, tmp_path: pathlib.Path, emulator: EmulatorServer, ns: str
) -> None:
    """kubectl's default `--validate=strict` becomes fieldValidation=Strict on the server: a field the schema
    does not declare fails the create and the update and changes nothing; `--validate=false` prunes it."""
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump(widget("kw", replicas=2, replcas=3)))
    refused = kubectl_fails(kubectl, "apply", "-f", str(typo))
    assert 'strict decoding error: unknown field "spec.replcas"' in refused
    assert emulator.get("test.dev/v1", "widgets", "kw", ns) is None
    kubectl("apply", "-f", str(manifests))
    stored = emulator.get("test.dev/v1", "widgets", "kw", ns)
    assert stored is not None
    refused = kubectl_fails(kubectl, "apply", "-f", str(typo))  # now a patch of the existing widget
    assert 'unknown field "spec.replcas"' in refused
    assert emulator.get("test.dev/v1", "widgets", "kw", ns) == stored
    kubectl("apply", "--validate=false", "-f", str(typo))
    pruned = emulator.get("test.dev/v1", "widgets", "kw", ns)
    assert pruned is not None
    assert "replcas" not in pruned["spec"]


def test_explain_shows_the_generated_crd_descriptions(kubectl: Kubectl) -> None:
    """`kubectl explain` reads the served OpenAPI v3 documents: the CRD's descriptions, enums, required."""
    kubectl("apply", "-f", str(CRDS / "specdecodedeployments.specfleet.dev.yaml"))
    text = " ".join(kubectl("explain", "sdd.spec.speculation").split())
    assert "KIND: SpecDecodeDeployment" in text
    for name, field in SpeculationSpec.model_fields.items():
        assert field.description is not None
        assert " ".join(field.description.split()) in text, name
    assert "method <string> -required-" in text
    replicas = " ".join(kubectl("explain", "specdecodedeployments.spec.replicas").split())
    description = SpecDecodeDeploymentSpec.model_fields["replicas"].description
    assert description is not None
    assert " ".join(description.split()) in replicas

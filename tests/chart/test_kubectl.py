"""`helm template | kubectl apply --dry-run=client` against the emulator, as an SRE previews an install."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import pytest

from specfleet.emulator import EmulatorServer
from tests.chart.helm import template_result
from tests.chart.validate import SCHEMAS
from tests.fixtures.deps import require_binary


def _monitoring_crd(path: pathlib.Path) -> dict[str, Any]:
    """A CRD for one vendored prometheus-operator schema, so the API knows PodMonitor & co."""
    vendored = json.loads(path.read_text())
    group, version = vendored["apiVersion"].split("/")
    plural, kind = path.stem, vendored["kind"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": vendored["openAPIV3Schema"]},
                }
            ],
        },
    }


# all-enabled also renders a NetworkPolicy, a kind the emulator does not serve.
@pytest.mark.parametrize("value_set", ["default", "namespaced"])
def test_template_applies_with_kubectl_dry_run(
    emulator: EmulatorServer, kubeconfig: pathlib.Path, value_set: str
) -> None:
    kubectl = require_binary("kubectl")
    for path in sorted(SCHEMAS.glob("*.json")):
        emulator.apply(_monitoring_crd(path))
    rendered = template_result(value_set, include_crds=True)
    assert rendered.returncode == 0, rendered.stderr
    result = subprocess.run(
        # No --namespace: every namespaced object names its own (release or watched namespace).
        [
            kubectl,
            "--kubeconfig",
            str(kubeconfig),
            "apply",
            "--dry-run=client",
            "-f",
            "-",
            "-o",
            "name",
        ],
        input=rendered.stdout,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    applied = result.stdout.split()
    assert "deployment.apps/sf-specfleet" in applied
    assert "customresourcedefinition.apiextensions.k8s.io/specdecodedeployments.specfleet.dev" in applied

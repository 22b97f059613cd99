"""The engine objects the operator renders for the example SpecDecodeDeployments (what the chart must fit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specfleet.operator.api.parse import parse_spec
from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE
from specfleet.operator.render.children import render_children
from specfleet.operator.render.engine import initial_speculation
from specfleet.operator.render.labels import Owner
from tests.examples import load


def rendered_children(path: Path) -> list[dict[str, Any]]:
    """Deployment, Service and PDB the operator creates first for the example at `path`."""
    resource = load(path)
    meta = resource["metadata"]
    spec = parse_spec(resource["spec"])
    owner = Owner(name=meta["name"], namespace=meta.get("namespace", "default"), uid=f"uid-{meta['name']}")
    return render_children(owner, spec, initial_speculation(spec), DEFAULT_RUNTIME_IMAGE)


def engine_deployment(path: Path) -> dict[str, Any]:
    (deployment,) = [child for child in rendered_children(path) if child["kind"] == "Deployment"]
    return deployment

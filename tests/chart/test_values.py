"""values.yaml and values.schema.json: bad values fail at install, every field is documented."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.helm import CHART, ROOT, template_result

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
VALUES_TEXT = (CHART / "values.yaml").read_text()


@pytest.mark.parametrize(
    ("assignment", "complaint"),
    [
        ("replicas=2", "additional properties 'replicas' not allowed"),
        ("operator.prometheusURL=http://p:9090", "additional properties 'prometheusURL' not allowed"),
        ("monitoring.podMonitor.enable=true", "additional properties 'enable' not allowed"),
        ("defaultPolicy.spec.intervalSecs=30", "additional properties 'intervalSecs' not allowed"),
        ("replicaCount=two", "/replicaCount"),
        ("replicaCount=0", "/replicaCount"),
        ("operator.verbose=yes", "/operator/verbose"),
        ("operator.logFormat=xml", "/operator/logFormat"),
        ("operator.prometheusUrl=prometheus:9090", "/operator/prometheusUrl"),
        ("operator.watchNamespaces={Team-A}", "/operator/watchNamespaces/0"),
        ("operator.labels.deployment=specfleet.dev/deployment", "/operator/labels/deployment"),
        ("operator.metricsPort=70000", "/operator/metricsPort"),
        ("image.pullPolicy=Sometimes", "/image/pullPolicy"),
        ("image.digest=latest", "/image/digest"),
        ("defaultPolicy.spec.intervalSeconds=1", "/defaultPolicy/spec/intervalSeconds"),
        ("defaultPolicy.spec.fallback=Panic", "/defaultPolicy/spec/fallback"),
        ("monitoring.prometheusRule.window=five minutes", "/monitoring/prometheusRule/window"),
        ("service.type=ExternalName", "/service/type"),
    ],
)
def test_bad_values_are_rejected(assignment: str, complaint: str) -> None:
    result = template_result(sets=[assignment])
    assert result.returncode != 0, f"{assignment} was accepted"
    assert complaint in result.stderr, result.stderr


def test_bad_values_file_is_rejected(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"resources": {"requests": {"cpu": "1"}, "limit": {"memory": "1Gi"}}}))
    result = template_result(files=[values])
    assert result.returncode != 0
    assert "additional properties 'limit' not allowed" in result.stderr


def test_policy_values_mirror_the_speculationpolicy_crd() -> None:
    crd = yaml.safe_load((ROOT / "crds" / "speculationpolicies.specfleet.dev.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    crd_spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    values_spec = SCHEMA["properties"]["defaultPolicy"]["properties"]["spec"]
    assert values_spec["properties"] == crd_spec["properties"]
    assert values_spec["additionalProperties"] is False


def _schema_objects(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _schema_objects(child, f"{path}.{name}" if path else name)


def test_every_schema_field_is_closed_and_described() -> None:
    for path, node in _schema_objects(SCHEMA):
        if path:
            assert node.get("description"), f"{path} has no description"
        if "properties" in node:
            assert node.get("additionalProperties") is False, f"{path} accepts unknown keys"


def _documented_keys(text: str) -> Iterator[tuple[str, bool]]:
    """(dotted key, has a comment right above it) for every key line of values.yaml."""
    stack: list[tuple[int, str]] = []
    previous = ""
    for line in text.splitlines():
        match = re.match(r"^(\s*)([A-Za-z_][\w.-]*):", line)
        if match:
            indent = len(match.group(1))
            stack = [(depth, key) for depth, key in stack if depth < indent] + [(indent, match.group(2))]
            yield ".".join(key for _, key in stack), previous.lstrip().startswith("#")
        if line.strip():
            previous = line


def test_every_value_is_documented_in_values_yaml() -> None:
    """Each leaf the schema defines (and each free-form map) has a comment in values.yaml."""
    leaves = {
        path
        for path, node in _schema_objects(SCHEMA)
        if path and "properties" not in node and not path.startswith("defaultPolicy.spec.")
    }
    documented = {key for key, commented in _documented_keys(VALUES_TEXT) if commented}
    present = {key for key, _ in _documented_keys(VALUES_TEXT)}
    assert leaves - {"global"} <= present, f"not in values.yaml: {sorted(leaves - present - {'global'})}"
    assert not (leaves & present) - documented, f"undocumented: {sorted((leaves & present) - documented)}"

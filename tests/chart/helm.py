"""Run the real helm binary on charts/specfleet and parse what it renders."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.deps import require_binary

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "specfleet"
VALUES = Path(__file__).parent / "values"
RELEASE = "sf"
NAMESPACE = "specfleet-system"
# Named values files under tests/chart/values/ ("default" is the chart's own values.yaml alone).
VALUE_SETS = ("default", "all-enabled", "namespaced")
TIMEOUT_SECONDS = 60


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    """Run helm; never raises on a non-zero exit (callers assert on it, with stderr in the message)."""
    binary = require_binary("helm")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)


def value_args(value_set: str = "default", sets: Sequence[str] = (), files: Sequence[Path] = ()) -> list[str]:
    args: list[str] = []
    if value_set != "default":
        args += ["--values", str(VALUES / f"{value_set}.yaml")]
    for path in files:
        args += ["--values", str(path)]
    for assignment in sets:
        args += ["--set", assignment]
    return args


def template_result(
    value_set: str = "default",
    sets: Sequence[str] = (),
    files: Sequence[Path] = (),
    include_crds: bool = False,
) -> subprocess.CompletedProcess[str]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, *value_args(value_set, sets, files)]
    return helm(*args, *(["--include-crds"] if include_crds else []))


def render(
    value_set: str = "default",
    sets: Sequence[str] = (),
    files: Sequence[Path] = (),
    include_crds: bool = False,
) -> list[dict[str, Any]]:
    """`helm template` output as a list of manifests; fails the test when helm refuses."""
    result = template_result(value_set, sets, files, include_crds)
    assert result.returncode == 0, result.stderr
    return parse_manifests(result.stdout)


def parse_manifests(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def of_kind(manifests: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [doc for doc in manifests if doc.get("kind") == kind]


def one(manifests: Iterable[Mapping[str, Any]], kind: str) -> Mapping[str, Any]:
    found = of_kind(manifests, kind)
    assert len(found) == 1, f"expected one {kind}, rendered {len(found)}"
    return found[0]


def chart_values(value_set: str = "default") -> dict[str, Any]:
    """The chart's defaults overlaid with a named values file (one level deep, enough for tests to read)."""
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    if value_set != "default":
        overlay = yaml.safe_load((VALUES / f"{value_set}.yaml").read_text())
        for key, value in overlay.items():
            values[key] = {**values[key], **value} if isinstance(value, dict) else value
    return values


def chart_metadata() -> dict[str, Any]:
    metadata: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return metadata

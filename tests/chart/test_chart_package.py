"""The chart as Helm sees it: lint, package, and the CRDs it installs (the generated ones, written into it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specfleet.operator.api.crdgen import all_crds
from specfleet.operator.cli import main, render_crd_files
from tests.chart.helm import CHART, ROOT, VALUE_SETS, helm, parse_manifests, value_args

KOPF_PEERING_CRDS = {"clusterkopfpeerings.kopf.dev", "kopfpeerings.kopf.dev"}


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_lint_strict(value_set: str) -> None:
    result = helm("lint", "--strict", str(CHART), *value_args(value_set))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout, result.stdout
    assert "[ERROR]" not in result.stdout, result.stdout


def test_chart_crd_files_are_the_generator_output() -> None:
    """Real files (a symlink out of the chart breaks `helm pull` of a repository and tools that copy charts),
    exactly what `specfleet crds --write charts/specfleet/crds/specfleet` writes, and the same as crds/."""
    folder = CHART / "crds" / "specfleet"
    assert not folder.is_symlink()
    assert main(["crds", "--check", str(folder)]) == 0, f"run `specfleet crds --write {folder.relative_to(ROOT)}`"
    assert {path.name: path.read_text() for path in folder.iterdir()} == render_crd_files()


def _crds_by_name(text: str) -> dict[str, dict[str, object]]:
    return {doc["metadata"]["name"]: doc for doc in parse_manifests(text)}


def test_chart_crds_equal_the_generated_ones() -> None:
    result = helm("show", "crds", str(CHART))
    assert result.returncode == 0, result.stderr
    crds = _crds_by_name(result.stdout)
    generated = {crd["metadata"]["name"]: crd for crd in all_crds().values()}
    assert {name: crds[name] for name in generated} == generated
    assert set(crds) == set(generated) | KOPF_PEERING_CRDS


def test_packaged_chart_carries_the_crds(tmp_path: Path) -> None:
    result = helm("package", str(CHART), "--destination", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (package,) = tmp_path.glob("specfleet-*.tgz")
    shown = helm("show", "crds", str(package))
    assert shown.returncode == 0, shown.stderr
    generated = {crd["metadata"]["name"] for crd in all_crds().values()}
    assert set(_crds_by_name(shown.stdout)) == generated | KOPF_PEERING_CRDS


def test_peering_crds_are_the_ones_the_emulator_serves() -> None:
    """The chart's copy of Kopf's peering CRDs and the emulator's (specfleet.emulator) agree."""
    from specfleet.emulator import kopf_peering_crds

    chart_crds = parse_manifests((CHART / "crds" / "kopf-peering.yaml").read_text())
    assert sorted(chart_crds, key=str) == sorted(kopf_peering_crds(), key=str)

from __future__ import annotations

from pathlib import Path

import pytest

from specfleet.operator.cli import cluster_configured, main, render_crd_files


def test_crds_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    assert main(["crds", "--write", str(tmp_path)]) == 0
    assert main(["crds", "--check", str(tmp_path)]) == 0
    stale = tmp_path / next(iter(render_crd_files()))
    stale.write_text(stale.read_text().replace("Speculation settings", "Edited by hand"))
    assert main(["crds", "--check", str(tmp_path)]) == 1


def test_crds_write_and_check_several_folders(tmp_path: Path) -> None:
    folders = [str(tmp_path / "crds"), str(tmp_path / "chart")]
    assert main(["crds", "--write", folders[0], "--write", folders[1]]) == 0
    assert main(["crds", "--check", folders[0], "--check", folders[1]]) == 0
    (tmp_path / "chart" / "renamed.specfleet.dev.yaml").write_text("kind: CustomResourceDefinition\n")
    assert main(["crds", "--check", folders[0], "--check", folders[1]]) == 1
    assert main(["crds", "--check", folders[0]]) == 0


def test_crds_print(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    assert "kind: CustomResourceDefinition" in capsys.readouterr().out


def test_cluster_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert not cluster_configured({})
    assert cluster_configured({"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert not cluster_configured({"KUBECONFIG": str(tmp_path / "missing")})
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\n")
    assert cluster_configured({"KUBECONFIG": str(config)})
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("apiVersion: v1\n")
    assert cluster_configured({})


def test_unknown_arguments_are_refused() -> None:
    with pytest.raises(SystemExit):
        main(["crds", "--bogus"])

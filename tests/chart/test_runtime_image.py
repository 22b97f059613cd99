"""The engine pods' default image is the operator's configuration: one name in the chart, the operator's default
and docs/images.md, reaching the operator as SPECFLEET_RUNTIME_IMAGE."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE, RUNTIME_IMAGE_REPOSITORY, add_arguments, config_from
from tests.chart.helm import ROOT, chart_metadata, chart_values, one, render, template_result

DIGEST = "sha256:" + "ab" * 32


def _operator_env(sets: tuple[str, ...] = ()) -> dict[str, str]:
    deployment: Mapping[str, Any] = one(render(sets=sets), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {var["name"]: var.get("value", "") for var in container["env"]}


def test_the_charts_default_is_the_operators_default_and_the_documented_name() -> None:
    values = chart_values()["runtimeImage"]
    assert values["repository"] == RUNTIME_IMAGE_REPOSITORY
    assert f"{RUNTIME_IMAGE_REPOSITORY}:{chart_metadata()['appVersion']}" == DEFAULT_RUNTIME_IMAGE
    assert _operator_env()["SPECFLEET_RUNTIME_IMAGE"] == DEFAULT_RUNTIME_IMAGE
    # docs/images.md builds and pushes `<registry>/specfleet-runtime:<version>`; the default is that name.
    assert RUNTIME_IMAGE_REPOSITORY.rsplit("/", 1)[1] == "specfleet-runtime"
    assert '"$REGISTRY/specfleet-runtime:$VERSION"' in (ROOT / "docs" / "images.md").read_text()


def test_tag_and_digest_set_the_image() -> None:
    assert _operator_env(("runtimeImage.tag=1.2.3",))["SPECFLEET_RUNTIME_IMAGE"].endswith("specfleet-runtime:1.2.3")
    pinned = _operator_env(("runtimeImage.repository=registry.test/rt", f"runtimeImage.digest={DIGEST}"))
    assert pinned["SPECFLEET_RUNTIME_IMAGE"] == f"registry.test/rt@{DIGEST}"


def test_bad_runtime_image_values_are_refused() -> None:
    for assignment, complaint in (
        ("runtimeImage.digest=latest", "/runtimeImage/digest"),
        ("runtimeImage.repository=", "/runtimeImage/repository"),
        ("runtimeImage.name=x", "additional properties 'name' not allowed"),
    ):
        result = template_result(sets=[assignment])
        assert result.returncode != 0, assignment
        assert complaint in result.stderr, result.stderr


def test_the_operator_reads_it_from_the_environment_and_the_flag() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    env = _operator_env(("runtimeImage.tag=1.2.3",))
    assert config_from(env).runtime_image == env["SPECFLEET_RUNTIME_IMAGE"]
    assert config_from(env, parser.parse_args(["--runtime-image", "registry.test/rt:2"])).runtime_image == (
        "registry.test/rt:2"
    )
    assert config_from({}).runtime_image == DEFAULT_RUNTIME_IMAGE

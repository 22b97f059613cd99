"""Each image carries only what runs in it.

There is no Docker engine here, so the test checks the two things an image is made of: which folders and
wheels the Dockerfile's stages take, and what those wheels hold. It builds the wheels as the build stage does,
reads their files and requirements, and imports every module of an image's wheels in an interpreter that sees
nothing else of specfleet (`python -S`: no .pth files, so none of the editable workshop packages).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.images.dockerfile import stage

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ("simulator", "emulator", "demo", "profile")
PACKAGES = {"specfleet": "operator", "specfleet-runtime": "runtime", "specfleet-profile": "profile"}
UNLOADED = ("matplotlib", "rich", "kmock", "celpy")  # what the operator's and the runtime's images never import
# Third-party packages only the workshop needs; the operator's image must not require them.
WORKSHOP_ONLY = {"matplotlib", "rich", "kmock", "cel-python", "jsonpatch", "protobuf"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheels the Dockerfile's build stages make, built from copies (setuptools writes build/ beside them)."""
    out, sources = tmp_path_factory.mktemp("wheels"), tmp_path_factory.mktemp("sources")
    for folder in ("runtime", "operator", "profile"):
        shutil.copytree(ROOT / folder, sources / folder, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out)]
        + [str(sources / folder) for folder in ("runtime", "operator", "profile")],
        check=True,
        timeout=240,
    )
    return {_distribution(path): path for path in out.glob("*.whl")}


def _distribution(wheel: Path) -> str:
    return wheel.name.split("-")[0].replace("_", "-")


def test_the_build_stage_takes_only_the_operator_and_the_runtime() -> None:
    build = stage("build")
    assert re.findall(r"^COPY (\S+) ", build, re.MULTILINE) == ["operator/", "runtime/"]
    assert "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ./runtime ./operator" in build


def test_the_profilers_wheel_stage_takes_only_the_profiler() -> None:
    wheel = stage("profile_wheel")
    assert re.findall(r"^COPY (\S+) ", wheel, re.MULTILINE) == ["profile/"]
    assert "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ./profile" in wheel


def test_each_image_installs_its_own_wheels() -> None:
    assert "/wheels/specfleet_runtime-*.whl /wheels/specfleet-*.whl" in stage("operator")
    assert "specfleet_profile" not in stage("operator")
    assert "/wheels/specfleet_profile-*.whl" in stage("profiler")
    runtime = stage("runtime")
    assert "COPY --from=build /wheels/specfleet_runtime-*.whl /wheels/" in runtime
    assert "specfleet-*.whl" not in runtime


def test_the_wheels_hold_one_package_each(wheels: dict[str, Path]) -> None:
    assert set(wheels) == set(PACKAGES)
    for distribution, package in (
        ("specfleet", "operator"),
        ("specfleet-runtime", "runtime"),
        ("specfleet-profile", "profile"),
    ):
        names = zipfile.ZipFile(wheels[distribution]).namelist()
        code = {name.split("/")[1] for name in names if name.startswith("specfleet/")}
        assert code == {package}, f"{distribution} carries {sorted(code)}"
        assert not any(name == "specfleet/__init__.py" for name in names)  # a namespace portion


def test_the_operator_requires_nothing_of_the_workshop(wheels: dict[str, Path]) -> None:
    required = _requirements(wheels["specfleet"])
    unconditional = {_name(req) for req in required if "extra ==" not in req}
    assert unconditional & WORKSHOP_ONLY == set()
    assert {name for name in unconditional if name.startswith("specfleet-")} == {"specfleet-runtime"}
    extras = set(re.findall(r'extra == "(\w+)"', " ".join(required)))
    assert {"sim", "emulator", "demo", "profile"} <= extras


def test_the_runtime_requires_only_what_the_vllm_image_ships(wheels: dict[str, Path]) -> None:
    required = {_name(req) for req in _requirements(wheels["specfleet-runtime"]) if "extra ==" not in req}
    assert required == {"aiohttp", "prometheus-client"}


@pytest.mark.parametrize(
    ("distributions", "absent", "unloaded"),
    [
        (("specfleet", "specfleet-runtime"), WORKSHOP, ("matplotlib", "rich", "kmock", "celpy")),
        (("specfleet-runtime",), ("operator", *WORKSHOP), ("matplotlib", "rich", "kmock", "celpy")),
        (
            ("specfleet", "specfleet-runtime", "specfleet-profile"),
            ("simulator", "emulator", "demo"),
            ("kmock", "celpy"),
        ),
    ],
    ids=["operator-image", "runtime-image", "profiler-image"],
)
def test_every_module_of_an_image_imports_without_the_rest(
    wheels: dict[str, Path],
    tmp_path: Path,
    distributions: tuple[str, ...],
    absent: tuple[str, ...],
    unloaded: tuple[str, ...],
) -> None:
    target = tmp_path / "image"
    for distribution in distributions:
        zipfile.ZipFile(wheels[distribution]).extractall(target)
    script = f"""
import importlib, importlib.util, pkgutil, sys
sys.path[:0] = [{str(target)!r}, {sysconfig.get_paths()["purelib"]!r}]
import specfleet
for module in pkgutil.walk_packages(specfleet.__path__, "specfleet."):
    importlib.import_module(module.name)
missing = [name for name in {list(absent)!r} if importlib.util.find_spec("specfleet." + name) is not None]
assert not missing, f"image sees {{missing}}"
loaded = sorted(name for name in {list(unloaded)!r} if name in sys.modules)
assert not loaded, f"image imported {{loaded}}"
print(len(list(pkgutil.walk_packages(specfleet.__path__, "specfleet."))))
"""
    result = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split()[-1]) > 10  # the walk found the image's modules


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(metadata).decode())
    return list(message.get_all("Requires-Dist") or [])


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None
    return match.group(0).lower().replace("_", "-")

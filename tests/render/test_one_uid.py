"""One UID everywhere: the images' user (Dockerfile), the chart's operator pods, the engine pods the operator
renders and docs/images.md all use specfleet.runtime.image.SPECFLEET_UID."""

from __future__ import annotations

import re

import yaml

from specfleet.operator.api.constants import PROFILE_KIND
from specfleet.operator.api.profile_types import SpeculationProfileSpec
from specfleet.operator.render.labels import Owner
from specfleet.operator.render.profile import render_job
from specfleet.runtime.image import SPECFLEET_UID
from tests.chart.engines import engine_deployment
from tests.examples import EXAMPLES, ROOT
from tests.images.dockerfile import stages

SWEEP = {"concurrencies": [1, 4], "k": [1]}


def test_every_image_is_built_with_the_uid() -> None:
    # Each final stage declares the UID after its FROM, and runs as it.
    users = {name: re.findall(r"^ARG UID=(\d+)$", body, re.M) for name, body in stages().items() if "USER" in body}
    assert {"operator", "runtime", "profiler"} <= users.keys()
    assert all(uids == [str(SPECFLEET_UID)] for uids in users.values()), users


def test_the_charts_operator_pods_run_as_the_uid() -> None:
    values = yaml.safe_load((ROOT / "charts" / "specfleet" / "values.yaml").read_text())
    context = values["podSecurityContext"]
    assert (context["runAsUser"], context["runAsGroup"]) == (SPECFLEET_UID, SPECFLEET_UID)


def test_the_engine_pods_run_as_the_uid() -> None:
    context = engine_deployment(EXAMPLES / "llama-8b-eagle3.yaml")["spec"]["template"]["spec"]["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (SPECFLEET_UID,) * 3


def test_the_image_docs_name_the_uid() -> None:
    table = (ROOT / "docs" / "images.md").read_text()
    rows = re.findall(r"^\| `(operator|runtime|profiler)` .*\| (\d+) +\|$", table, re.M)
    assert dict(rows) == {name: str(SPECFLEET_UID) for name in ("operator", "runtime", "profiler")}


def test_the_profiling_jobs_run_as_the_uid() -> None:
    owner = Owner(name="chat", namespace="team-a", uid="profile-uid", kind=PROFILE_KIND)
    spec = SpeculationProfileSpec.model_validate(
        {"fleetRef": {"name": "chat"}, "prompts": {"configMapKeyRef": {"name": "p", "key": "k"}}, "sweep": SWEEP}
    )
    job = render_job(owner, 1, spec, "chat", "registry/profiler:1", "http://10.0.0.9:8000", "http://10.0.0.9:8081")
    context = job["spec"]["template"]["spec"]["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (SPECFLEET_UID,) * 3

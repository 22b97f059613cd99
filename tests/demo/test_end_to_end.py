"""End to end: the real operator, the emulator and the local fleet, through a load plateau above the crossover.

One run (module-scoped, ~100 s): 30 s low, 30 s at the peak, 30 s low. The operator must switch speculation
off once the load passes the crossover and back on once it falls, within the policy's dwell and cooldown;
then kubectl reads and scales the fleet while it still runs.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from specfleet.demo.resources import DEMO_POLICY
from specfleet.demo.session import DemoConfig, DemoSession
from specfleet.demo.timeline import Timeline
from tests.fixtures.deps import require_binary

DURATION = 90.0
PEAK_START, PEAK_END = DURATION / 3, 2 * DURATION / 3

pytestmark = pytest.mark.slow


@dataclass
class Run:
    demo: DemoSession
    timeline: Timeline
    deployment_args: list[tuple[float, list[str]]]  # (seconds, container args of the Deployment)


def _args(demo: DemoSession) -> list[str]:
    deployment = demo.emulator.get("apps/v1", "deployments", "chat", "default")
    assert deployment is not None
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    config = DemoConfig(workdir=tmp_path_factory.mktemp("demo"), trace="plateau", duration=DURATION, signals="scrape")
    started = time.monotonic()
    with DemoSession(config) as demo:
        timeline = demo.new_timeline()
        seen: list[tuple[float, list[str]]] = []
        while (now := demo.sample(timeline)) < DURATION:
            seen.append((now, _args(demo)))
            time.sleep(0.5)
        print(f"demo run: {time.monotonic() - started:.0f} s")
        yield Run(demo, timeline, seen)


def test_speculation_goes_off_above_the_crossover_and_back_on_below_it(run: Run) -> None:
    changes = run.timeline.changes("chat")
    actions = [(round(c.time), c.action, c.reason) for c in changes]
    disables = [c for c in changes if c.action == "disable"]
    assert disables, actions
    off = disables[0]
    assert PEAK_START < off.time < PEAK_END, actions
    enables = [c for c in changes if c.action == "enable" and c.time > off.time]
    assert enables, actions
    assert enables[0].time > PEAK_END, actions
    # The Deployment the pods run from followed: no speculative config at the peak, one again at the end.
    at_peak = [args for t, args in run.deployment_args if off.time + 2 < t < PEAK_END]
    assert at_peak
    assert all("--speculative-config" not in args for args in at_peak)
    assert "--speculative-config" in run.deployment_args[-1][1]


def test_restarts_respect_the_dwell_and_the_cooldown(run: Run) -> None:
    # A new table pushed to the running pods (reason "(live)") restarts nothing: no dwell, no cooldown.
    changes = [c for c in run.timeline.changes("chat") if not c.reason.endswith("(live)")]
    assert changes
    for before, after in itertools.pairwise(changes):
        # Decision times have one-second resolution in status.
        assert after.time - before.time >= DEMO_POLICY["cooldownSeconds"] - 1, (before, after)
    dwelling = [d for d in run.timeline.decisions if d.deployment == "chat" and d.reason.startswith("dwell")]
    for change in changes:
        wanted = [d for d in dwelling if change.action in d.reason and d.time <= change.time]
        assert wanted, f"{change} was not preceded by a dwell hold"
        assert change.time - wanted[-1].time >= DEMO_POLICY["dwellSeconds"] - 1


Kubectl = Callable[..., str]


@pytest.fixture(scope="module")
def kubectl(run: Run, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = require_binary("kubectl")
    cache = tmp_path_factory.mktemp("kubectl-cache")

    def call(*args: str) -> str:
        command = [binary, f"--kubeconfig={run.demo.kubeconfig}", f"--cache-dir={cache}", "-n", "default", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return call


def test_kubectl_get_shows_the_printer_columns(kubectl: Kubectl) -> None:
    header, row = kubectl("get", "sdd").splitlines()[:2]
    columns = header.split()
    assert columns[0] == "NAME"
    assert {"MODE", "K", "READY"} <= set(columns)
    values = dict(zip(columns, row.split(), strict=False))
    assert values["NAME"] == "chat"
    assert values["K"] == "3"  # back on at the end of the run


def test_kubectl_describe_shows_conditions_and_events(kubectl: Kubectl) -> None:
    text = kubectl("describe", "sdd", "chat")
    assert "Conditions:" in text
    assert "MetricsAvailable" in text
    events = text.split("Events:")[1]
    assert "Disabled" in events or "disable" in events.lower(), events


def _ready_condition(pod: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == "Ready"), {})


def test_kubectl_scale_grows_the_fleet(kubectl: Kubectl, run: Run) -> None:
    kubectl("scale", "sdd/chat", "--replicas=3")
    assert run.demo.fleet is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = json.loads(kubectl("get", "pods", "-o", "json"))["items"]
        ready = [
            p
            for p in pods
            if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        ]
        # A rollout the policy started just before may still hold its surge pod: wait for it to settle too.
        if len(ready) == 3 and len(run.demo.fleet.serving("chat")) == 3:
            break
        time.sleep(0.5)
    assert len(ready) == 3, [p["metadata"]["name"] for p in pods]
    assert len(run.demo.fleet.serving("chat")) == 3

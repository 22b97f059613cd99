"""The crash campaign: SIGKILL the operator process at random points, restart it, and check nothing was lost.

Shared by tests/reliability/test_crash_safety.py (a few kills) and benchmarks/crash_campaign.py (100 kills).
Two kinds of fleets run side by side: "rollout" fleets, whose load a fake kubelet flips across the crossover
so the policy keeps switching speculation (restart-bound rollouts), and "reconcile" fleets, whose spec the
campaign edits and which it keeps creating, so kills also land inside create/update handlers.
"""

from __future__ import annotations

import contextlib
import itertools
import pathlib
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import kubernetes.client

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import GROUP, LABEL_CONFIG_HASH, LABEL_DEPLOYMENT, MANAGER, SDD_PLURAL, VERSION
from specfleet.operator.api.parse import parse_spec
from specfleet.operator.api.types import SpeculationState
from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE
from specfleet.operator.policy.decision import Action
from specfleet.operator.render.applied import in_place
from specfleet.operator.render.children import render_children
from specfleet.operator.render.labels import Owner
from specfleet.operator.status.evaluation import DECISIONS_KEPT
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, wait_for
from tests.fixtures.prometheus import PrometheusServer
from tests.operator.test_policy_loop import HIGH, LOW, Kubelet, _fleet
from tests.reliability.process import OperatorProcess

SDD_API = f"{GROUP}/{VERSION}"
CHILD_RESOURCES = ("deployments", "services", "poddisruptionbudgets")
RESTART_ACTIONS = {str(action) for action in Action} - {Action.HOLD}  # restart-bound unless live (below)
ROLLOUT_FLEETS = ("roll-a", "roll-b")
RECONCILE_EXAMPLES = ("llama-8b-eagle3.yaml", "code-assistant-ngram.yaml")
MAX_CREATED = 12  # extra fleets created during the campaign (each adds three children)


@dataclass
class CampaignReport:
    kills: int = 0
    seconds: float = 0.0
    phases: Counter[str] = field(default_factory=Counter)  # what the campaign had just started before a kill
    child_creates: dict[str, int] = field(default_factory=dict)  # creations (watch-log ADDED) per child object
    hash_changes: dict[str, int] = field(default_factory=dict)  # config-hash transitions per rollout fleet
    restart_decisions: dict[str, int] = field(default_factory=dict)  # applied restart-bound decisions
    history_violations: list[str] = field(default_factory=list)
    unconverged: list[str] = field(default_factory=list)
    crash_lines: list[str] = field(default_factory=list)

    @property
    def duplicates(self) -> dict[str, int]:
        return {name: count for name, count in self.child_creates.items() if count != 1}

    @property
    def double_restarts(self) -> dict[str, tuple[int, int]]:
        """Fleets whose Deployment changed configuration more often than the policy decided to."""
        return {
            name: (changes, self.restart_decisions.get(name, 0))
            for name, changes in self.hash_changes.items()
            if changes > self.restart_decisions.get(name, 0)
        }

    @property
    def data_lost(self) -> int:
        return len(self.history_violations) + len(self.unconverged)

    def lines(self) -> Iterator[str]:
        yield f"kills (SIGKILL + restart)          {self.kills} in {self.seconds:.0f} s"
        yield f"kill points                        {dict(self.phases)}"
        yield f"child objects created              {len(self.child_creates)} (duplicates: {len(self.duplicates)})"
        for name, changes in sorted(self.hash_changes.items()):
            decided = self.restart_decisions.get(name, 0)
            yield f"rollouts of {name:<22} {changes} config changes for {decided} applied restart decisions"
        yield f"status/decision history violations {len(self.history_violations)}"
        yield f"fleets not converged               {len(self.unconverged)}"
        yield f"operator crash lines in logs       {len(self.crash_lines)}"


def history_violation(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """Why `after` (a later status of the same fleet) lost something `before` had, or None."""
    old, new = before.get("decisions") or [], after.get("decisions") or []
    # The list only grows, dropping its oldest entries once it holds DECISIONS_KEPT.
    if not any(
        new[: len(old) - drop] == old[drop:] and (drop == 0 or len(new) == DECISIONS_KEPT)
        for drop in range(len(old) + 1)
    ):
        return f"decisions rewritten: {[d['time'] for d in old]} -> {[d['time'] for d in new]}"
    if before.get("policyState") and not after.get("policyState"):
        return "policyState reset"
    if (before.get("speculation") or {}).get("configHash") and not (after.get("speculation") or {}).get("configHash"):
        return "speculation state lost"
    return None


def config_hashes(emulator: EmulatorServer, namespace: str, name: str) -> list[str]:
    """Every configuration written to a fleet's Deployment through the API, in order."""
    hashes = []
    for request in emulator.requests:
        body = request.body if isinstance(request.body, dict) else {}
        target = request.name or body.get("metadata", {}).get("name")
        if request.namespace != namespace or request.resource != "deployments" or target != name:
            continue
        labels = body.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
        if request.verb in {"create", "patch", "update"} and LABEL_CONFIG_HASH in labels:
            hashes.append(labels[LABEL_CONFIG_HASH])
    return hashes


def changes(hashes: list[str]) -> int:
    return sum(1 for before, after in itertools.pairwise(hashes) if before != after)


class Campaign:
    """One namespace of fleets, one operator process, kills on a seeded random schedule."""

    def __init__(
        self,
        emulator: EmulatorServer,
        prometheus: PrometheusServer,
        kubeconfig: pathlib.Path,
        workdir: pathlib.Path,
        namespace: str,
        seed: int = 0,
    ) -> None:
        self.emulator, self.prometheus, self.namespace = emulator, prometheus, namespace
        self.random = random.Random(seed)
        self.operator = OperatorProcess(kubeconfig, workdir / "operator.log", prometheus_url=prometheus.url)
        self.custom = kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(str(kubeconfig)))
        self.report = CampaignReport()
        self.statuses: dict[str, dict[str, Any]] = {}
        self.decisions: dict[str, set[tuple[str, str, str]]] = {name: set() for name in ROLLOUT_FLEETS}
        self.created = 0
        self._stop_flips = threading.Event()

    # --- the fleets --------------------------------------------------------------------------------

    def fleets(self) -> list[dict[str, Any]]:
        answer = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, SDD_PLURAL)
        return list(answer["items"])

    def _setup(self) -> None:
        self.emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        self.emulator.apply(in_namespace(load(EXAMPLES / "sre-default-policy.yaml"), self.namespace))
        for name in ROLLOUT_FLEETS:
            self._create(_fleet(self.namespace, name))
        for example in RECONCILE_EXAMPLES:
            self._create(in_namespace(load(EXAMPLES / example), self.namespace))

    def _create(self, manifest: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, SDD_PLURAL, manifest)

    def _edit_or_create(self) -> str:
        """A random change that makes the operator reconcile (the kill then lands in or around it)."""
        choice = self.random.choice(("replicas", "extraArgs", "create", "none"))
        if choice == "create" and self.created < MAX_CREATED:
            self.created += 1
            manifest = in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), self.namespace)
            manifest["metadata"]["name"] = f"extra-{self.created}"
            self._create(manifest)
            return "create"
        if choice in {"replicas", "extraArgs"}:
            name = load(EXAMPLES / self.random.choice(RECONCILE_EXAMPLES))["metadata"]["name"]
            value: Any = self.random.randint(1, 4)
            patch = (
                {"replicas": value}
                if choice == "replicas"
                else {"runtime": {"extraArgs": [f"--max-num-seqs={value * 64}"]}}
            )
            self.custom.patch_namespaced_custom_object(
                GROUP, VERSION, self.namespace, SDD_PLURAL, name, {"spec": patch}
            )
            return f"update-{choice}"
        return "policy-loop"

    def _flip_load(self, kubelets: list[Kubelet], period: float) -> None:
        high = False
        while not self._stop_flips.wait(period):
            high = not high
            for kubelet in kubelets:
                kubelet.set_load(HIGH if high else LOW)

    # --- observations ------------------------------------------------------------------------------

    def _observe(self) -> None:
        """Compare every fleet's status with the last one seen; collect applied decisions."""
        for fleet in self.fleets():
            name, status = fleet["metadata"]["name"], fleet.get("status") or {}
            violation = history_violation(self.statuses.get(name, {}), status)
            if violation:
                self.report.history_violations.append(f"{name}: {violation}")
            self.statuses[name] = status
            for decision in status.get("decisions") or []:
                live = (decision.get("inputs") or {}).get("change") == "live"  # a table swapped in the pods
                if (
                    name in self.decisions
                    and decision["applied"]
                    and decision["action"] in RESTART_ACTIONS
                    and not live
                ):
                    self.decisions[name].add((decision["time"], decision["action"], decision["reason"]))

    def _converged(self) -> list[str]:
        """Fleets whose children differ from what their spec and recorded speculation state render."""
        problems = []
        for fleet in self.fleets():
            meta, status = fleet["metadata"], fleet.get("status") or {}
            if status.get("observedGeneration") != meta["generation"] or not status.get("speculation"):
                problems.append(f"{meta['name']}: status not caught up")
                continue
            owner = Owner(name=meta["name"], namespace=self.namespace, uid=meta["uid"])
            state = SpeculationState.model_validate(status["speculation"])
            for child in render_children(owner, parse_spec(fleet["spec"]), state, DEFAULT_RUNTIME_IMAGE):
                plural = {"Deployment": "deployments", "Service": "services"}.get(child["kind"], "poddisruptionbudgets")
                stored = self.emulator.get(child["apiVersion"], plural, child["metadata"]["name"], self.namespace)
                if stored is None or not in_place(child, stored, MANAGER):
                    problems.append(f"{meta['name']}: {child['kind']} differs from its rendering")
        return problems

    def _child_creates(self) -> dict[str, int]:
        creates: Counter[str] = Counter()
        for resource in CHILD_RESOURCES:  # children are applied (PATCH): creations are read from the watch log
            creates.update(f"{resource}/{name}" for name in self.emulator.created(resource, self.namespace))
        return dict(creates)

    def _children_per_fleet(self) -> list[str]:
        """Exactly one Deployment per fleet exists (no orphan or duplicate under another name)."""
        apps = kubernetes.client.AppsV1Api(self.custom.api_client)
        owners = Counter(
            d.metadata.labels.get(LABEL_DEPLOYMENT) for d in apps.list_namespaced_deployment(self.namespace).items
        )
        return [f"{owner}: {count} Deployments" for owner, count in owners.items() if count != 1]

    # --- the run -----------------------------------------------------------------------------------

    def run(self, kills: int, max_delay: float = 4.0, flip_seconds: float = 12.0) -> CampaignReport:
        started = time.monotonic()
        self._setup()
        with ExitStack() as stack:
            kubelets = [
                stack.enter_context(Kubelet(self.emulator, self.prometheus, self.namespace, name))
                for name in ROLLOUT_FLEETS
            ]
            flipper = threading.Thread(target=self._flip_load, args=(kubelets, flip_seconds), daemon=True)
            flipper.start()
            stack.callback(flipper.join, 5)
            stack.callback(self._stop_flips.set)
            stack.callback(self.operator.stop)
            self.operator.start()
            for _ in range(kills):
                phase = self._edit_or_create()
                time.sleep(self.random.uniform(0.2, max_delay))
                self.operator.kill()
                self.report.kills += 1
                self.report.phases[phase] += 1
                self._observe()
                self.operator.start()
            self._stop_flips.set()
            with contextlib.suppress(AssertionError):  # what did not converge is reported below
                wait_for(lambda: not self._converged(), 120, "every fleet to converge after the last restart")
            self._observe()
            self.report.unconverged = self._converged() + self._children_per_fleet()
        self.report.child_creates = self._child_creates()
        for name in ROLLOUT_FLEETS:
            hashes = config_hashes(self.emulator, self.namespace, name)
            self.report.hash_changes[name] = changes(hashes)
            self.report.restart_decisions[name] = len(self.decisions[name])
        self.report.crash_lines = self.operator.crash_lines()
        self.report.seconds = time.monotonic() - started
        return self.report

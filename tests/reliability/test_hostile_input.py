"""Hostile input: 1000+ generated resources through the API while the operator runs, and injection attempts."""

from __future__ import annotations

import copy
import json
import pathlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import kubernetes.client
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import GROUP, SDD_PLURAL, VERSION
from specfleet.operator.api.parse import InvalidSpecError, parse_spec
from specfleet.operator.api.types import SpeculationState
from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE
from specfleet.operator.render.children import render_children
from specfleet.operator.render.labels import Owner
from specfleet.runtime.engine_args import EngineConfig
from tests.examples import EXAMPLES, load
from tests.fixtures.cluster import CRDS_DIR
from tests.fixtures.operator import in_namespace, wait_for
from tests.operator.test_reconcile import _create, _deployment, _patch_spec, _sdd
from tests.reliability.process import OperatorProcess
from tests.reliability.schema_strategies import from_schema, mutated

SCHEMA = yaml.safe_load((CRDS_DIR / "specdecodedeployments.specfleet.dev.yaml").read_text())["spec"]["versions"][0][
    "schema"
]["openAPIV3Schema"]["properties"]["spec"]
VALID_EXAMPLES = 600
MUTATED_EXAMPLES = 600
NAMES = 40  # generated resources reuse this many names, so the operator sees creates and updates
SHELL_HOSTILE = st.sampled_from(
    ["a b", "it's", 'say "hi"', "x; rm -rf /", "$(id)", "`id`", "a\nb", "--port=1", "-h", "|| true", "a\tb"]
)


def _push(custom: kubernetes.client.CustomObjectsApi, namespace: str, name: str, spec: Any) -> int:
    """Create the resource, or replace the spec of the one already there (a JSON patch); the HTTP status."""
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "SpecDecodeDeployment", "metadata": {"name": name}}
    try:
        try:
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, SDD_PLURAL, {**body, "spec": spec})
            return 201
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:
                raise
        replace = [{"op": "replace", "path": "/spec", "value": spec}]
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, SDD_PLURAL, name, replace, _content_type="application/json-patch+json"
        )
        return 200
    except kubernetes.client.ApiException as exc:
        return int(exc.status)


def _generate(strategy: st.SearchStrategy[Any], examples: int, push: Callable[[Any], None]) -> None:
    """Feed `examples` documents to `push` (assertions come after, on what the API answered)."""

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(spec: Any) -> None:
        push(spec)

    run()


def _why(emulator: EmulatorServer, namespace: str, name: str) -> str:
    obj = _sdd(emulator, namespace, name)
    return f"{name}: spec {json.dumps(obj['spec'])[:300]} status {json.dumps(obj.get('status'))[:300]}"


def _served_or_marked(emulator: EmulatorServer, namespace: str, name: str) -> bool:
    """Reconciled to its generation with a Deployment, or carrying a condition that says why not."""
    obj = _sdd(emulator, namespace, name)
    status = obj.get("status") or {}
    invalid = any(c.get("reason") == "InvalidSpec" and c.get("message") for c in status.get("conditions") or [])
    current = status.get("observedGeneration") == obj["metadata"]["generation"]
    return invalid or (current and _deployment(emulator, namespace, name) is not None)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_generated_resources_are_refused_or_served_and_the_operator_survives(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api_client)
    emulator.apply(in_namespace(load(EXAMPLES / "sre-default-policy.yaml"), namespace))
    good = in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace)
    answers: Counter[int] = Counter()
    accepted: set[str] = set()
    with OperatorProcess(kubeconfig, tmp_path / "operator.log") as operator:
        _create(api_client, good)
        wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the known-good fleet")

        def push(spec: Any) -> None:
            name = f"h-{sum(answers.values()) % NAMES}"
            answer = _push(custom, namespace, name, spec)
            answers[answer] += 1
            if answer < 300:
                accepted.add(name)

        _generate(from_schema(SCHEMA), VALID_EXAMPLES, push)
        _generate(mutated(from_schema(SCHEMA)), MUTATED_EXAMPLES, push)
        _patch_spec(api_client, namespace, "code-assistant", {"spec": {"replicas": 3}})
        wait_for(
            lambda: (_deployment(emulator, namespace, "code-assistant") or {}).get("spec", {}).get("replicas") == 3,
            60,
            "the known-good fleet to follow a change after the storm",
        )
        unserved = sorted(accepted)
        wait_for(
            lambda: not [n for n in unserved if not _served_or_marked(emulator, namespace, n)],
            120,
            "every accepted resource to be served or marked invalid: "
            + "; ".join(_why(emulator, namespace, n) for n in unserved if not _served_or_marked(emulator, namespace, n))
            + "\n".join(operator.crash_lines()[:5]),
        )
        assert operator.alive(), "the operator process died"
        assert operator.crash_lines() == []
    print(f"\nhostile input: {sum(answers.values())} resources pushed, answers {dict(answers)}")
    assert sum(answers.values()) >= VALID_EXAMPLES + MUTATED_EXAMPLES
    assert set(answers) <= {200, 201, 422}, answers
    assert answers[422] > 0
    assert answers[201] > 0
    assert answers[200] > 0


def _hostile_spec(model: str, extra: str) -> dict[str, Any] | None:
    spec = copy.deepcopy(load(EXAMPLES / "code-assistant-ngram.yaml")["spec"])
    spec["model"]["name"] = model
    spec["runtime"] = {"extraArgs": [f"--chat-template={extra}", f"--response-role={extra}"]}
    try:
        return {"spec": parse_spec(spec)}
    except InvalidSpecError:
        return None


@settings(max_examples=100, deadline=None)
@given(model=st.one_of(SHELL_HOSTILE, st.text(min_size=1, max_size=40)), extra=SHELL_HOSTILE)
def test_shell_metacharacters_stay_single_argv_elements(model: str, extra: str) -> None:
    parsed = _hostile_spec(model, extra)
    if parsed is None:  # the API types refused the model name (e.g. empty): inert by construction
        return
    owner = Owner(name="chat", namespace="ns", uid="u")
    deployment = render_children(owner, parsed["spec"], SpeculationState(enabled=False), DEFAULT_RUNTIME_IMAGE)[0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["specfleet-runtime"]  # exec'd directly: no shell ever sees the args
    args = container["args"]
    assert all(isinstance(arg, str) for arg in args)
    assert args[args.index("--model") + 1] == model
    assert f"--chat-template={extra}" in args
    assert f"--response-role={extra}" in args
    back = EngineConfig.from_vllm_args(args)
    assert back.model == model
    assert back.extra_args[-2:] == (f"--chat-template={extra}", f"--response-role={extra}")
    assert json.loads(json.dumps(container)) == container  # survives the API's JSON round trip unchanged

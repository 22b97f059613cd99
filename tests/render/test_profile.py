"""What a SpeculationProfile renders: an engine pod of the fleet's model that the fleet never selects, and a Job
that sweeps it with `specfleet profile` and has no API credentials. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from specfleet.operator.api.constants import LABEL_CONFIG_HASH, LABEL_DEPLOYMENT, PROFILE_KIND
from specfleet.operator.api.profile_result import (
    TERMINATION_MESSAGE_LIMIT,
    ResultError,
    decode_result,
    encode_result,
)
from specfleet.operator.api.profile_types import (
    MAX_CONCURRENCIES,
    MAX_K_VALUES,
    Crossover,
    ProfilePoint,
    SpeculationProfileSpec,
    Summary,
)
from specfleet.operator.api.types import SpecDecodeDeploymentSpec
from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE
from specfleet.operator.render.children import control_secret_name, render_children
from specfleet.operator.render.engine import engine_config, initial_speculation
from specfleet.operator.render.labels import Owner
from specfleet.operator.render.profile import (
    RESULT_PATH,
    ProfileNotRunnableError,
    check_runnable,
    render_engine,
    render_job,
)
from specfleet.runtime.engine_args import EngineConfig
from tests.examples import EXAMPLES, load

IMAGE = "registry/runtime:1"
FLEET = Owner(name="llama-8b", namespace="team-a", uid="fleet-uid")
# The profile may share the fleet's name: nothing of the fleet must select its pods even then.
PROFILE = Owner(name="llama-8b", namespace="team-a", uid="profile-uid", kind=PROFILE_KIND)


def _fleet(**speculation: Any) -> SpecDecodeDeploymentSpec:
    base = load(EXAMPLES / "llama-8b-eagle3.yaml")["spec"]
    base["speculation"].update(speculation)
    return SpecDecodeDeploymentSpec.model_validate(base)


def _profile(**sweep: Any) -> SpeculationProfileSpec:
    return SpeculationProfileSpec.model_validate(
        {
            "fleetRef": {"name": FLEET.name},
            "prompts": {"configMapKeyRef": {"name": "prompts", "key": "chat.jsonl"}},
            "sweep": {"concurrencies": [4, 1, 2], "k": [3, 1], **sweep},
            "sampling": {"maxTokens": 64},
        }
    )


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_the_engine_runs_the_fleets_model_at_its_ceiling_with_a_live_table_and_is_never_the_fleets() -> None:
    fleet = _fleet(maxSpeculativeTokens=4)
    engine = render_engine(PROFILE, FLEET, fleet, DEFAULT_RUNTIME_IMAGE)
    template = engine["spec"]["template"]
    config = EngineConfig.from_vllm_args(template["spec"]["containers"][0]["args"])
    assert config.model == fleet.model.name
    assert config.speculative is not None
    assert config.speculative.k == 4
    assert config.speculative.schedule  # a live table: the Job sets each k without a restart
    assert engine["spec"]["replicas"] == 1
    assert engine["metadata"]["ownerReferences"][0]["kind"] == PROFILE_KIND
    labels = template["metadata"]["labels"]
    assert LABEL_DEPLOYMENT not in labels
    assert labels[LABEL_CONFIG_HASH] == config.config_hash()
    for child in render_children(FLEET, fleet, initial_speculation(fleet), IMAGE):
        selector = child["spec"].get("selector", {})
        assert not _selects(selector.get("matchLabels", selector), labels), child["kind"]
    # The fleet's own pods are not selected by the profile's engine either.
    fleet_pod = render_children(FLEET, fleet, initial_speculation(fleet), IMAGE)[0]["spec"]["template"]["metadata"]
    assert not _selects(engine["spec"]["selector"]["matchLabels"], fleet_pod["labels"])
    assert engine_config(fleet, initial_speculation(fleet)).model == config.model


def test_the_job_sweeps_every_k_and_the_baseline_with_the_prompts_of_its_own_namespace() -> None:
    job = render_job(
        PROFILE, 3, _profile(), FLEET.name, "registry/profiler:1", "http://10.0.0.9:8000", "http://10.0.0.9:8081"
    )
    assert job["metadata"]["name"] == "llama-8b-g3"
    again = render_job(PROFILE, 3, _profile(), FLEET.name, "registry/profiler:1", "http://a:8000", "http://a:8081", 2)
    assert again["metadata"]["name"] == "llama-8b-g3-r2"  # a sweep run again on drift: a Job of its own
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    assert container["command"] == ["specfleet", "profile"]
    assert args[args.index("--k") + 1] == "0,1,3"
    assert args[args.index("--concurrency") + 1] == "1,2,4"
    assert args[args.index("--live") + 1] == "http://10.0.0.9:8000"
    assert args[args.index("--control-url") + 1] == "http://10.0.0.9:8081"
    assert args[args.index("--max-tokens") + 1] == "64"
    assert args[args.index("--result") + 1] == RESULT_PATH == container["terminationMessagePath"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 0
    # The engine's Deployment does not select the Job's pod (nor would the Job controller take the engine's).
    engine = render_engine(PROFILE, FLEET, _fleet(), IMAGE)
    assert not _selects(engine["spec"]["selector"]["matchLabels"], job["spec"]["template"]["metadata"]["labels"])
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    # A volume names a ConfigMap and a Secret of the pod's own namespace: no field could reach another.
    assert volumes["prompts"]["configMap"] == {
        "name": "prompts",
        "items": [{"key": "chat.jsonl", "path": "requests.jsonl"}],
    }
    assert volumes["control-token"]["secret"]["secretName"] == control_secret_name(FLEET.name)


def test_a_sweep_the_fleet_cannot_take_live_is_refused() -> None:
    with pytest.raises(ProfileNotRunnableError, match="maxSpeculativeTokens"):
        check_runnable(_profile(k=[1, 6]), _fleet(maxSpeculativeTokens=5))
    fleet = _fleet()
    fleet.model.data_parallel_size = 2
    with pytest.raises(ProfileNotRunnableError, match="dataParallelSize"):
        check_runnable(_profile(), fleet)
    check_runnable(_profile(), _fleet())


def _point(k: int, concurrency: int) -> ProfilePoint:
    return ProfilePoint(
        k=k,
        concurrency=concurrency,
        requests=4 * concurrency,
        output_tokens=123_456,
        duration_seconds=12.345678,
        throughput_tokens_per_second=9876.54321,
        requests_per_second=12.3456789,
        tpot_seconds=Summary(mean=0.0123456, p50=0.0120001, p90=0.0150009),
        ttft_seconds=Summary(mean=0.234567, p50=0.2, p90=0.4),
        acceptance_length=None if k == 0 else 2.345678,
        step_seconds=0.0289999,
    )


def test_the_largest_sweep_the_spec_allows_fits_a_termination_message_and_round_trips() -> None:
    ks = range(MAX_K_VALUES + 1)
    points = [_point(k, 2**i) for k in ks for i in range(MAX_CONCURRENCIES)]
    crossovers = [
        Crossover(k=k, metric=m, bound="within", concurrency=7.123456) for k in ks[1:] for m in ("throughput", "tpot")
    ]
    text = encode_result(points, crossovers)
    assert len(text.encode()) <= TERMINATION_MESSAGE_LIMIT
    decoded, crossed = decode_result(text)
    assert [(p.k, p.concurrency) for p in decoded] == [(p.k, p.concurrency) for p in points]
    assert decoded[1].tpot_seconds.p90 == pytest.approx(0.0150009, rel=1e-3)
    assert decoded[0].acceptance_length is None
    assert crossed[0].concurrency == pytest.approx(7.123, rel=1e-3)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Error: engine unreachable",
        '{"format": "other"}',
        '{"format": "specfleet.profile/v1", "columns": [], "points": [], "crossovers": []}',
    ],
)
def test_what_is_not_a_result_is_refused(text: str) -> None:
    with pytest.raises(ResultError):
        decode_result(text)


def test_a_forged_row_is_refused() -> None:
    good = encode_result([_point(1, 1)], [])
    with pytest.raises(ResultError):
        decode_result(good.replace('"points":[[1,1,', '"points":[["x",1,'))
    with pytest.raises(ResultError):
        decode_result(good.replace('"points":[[1,1,', '"points":[[1,'))

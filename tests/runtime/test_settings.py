"""The runtime's plan: container args + environment → validated engine config, settings, info labels."""

from __future__ import annotations

import json

import pytest

from specfleet.runtime.engine_args import EngineConfig, EngineConfigError, SpeculativeConfig
from specfleet.runtime.health import HEALTH_PORT
from specfleet.runtime.settings import (
    DRAIN_SECONDS,
    ENV_CONFIG_HASH,
    ENV_DRAIN_SECONDS,
    ENV_ENGINE_INFO,
    ENV_EXTRA_ARGS,
    ENV_HEALTH_PORT,
    INFO_LABELS,
    LIVE_SCHEDULER,
    SERVE_MODULE,
    engine_info_labels,
    plan,
)

DRAFT = EngineConfig(
    model="meta-llama/Llama-3.1-8B-Instruct",
    served_model_name="llama",
    speculative=SpeculativeConfig(method="draft_model", k=4, draft_model="tiny-draft", schedule=((2, 4), (8, 2))),
)


def test_plan_round_trips_the_operators_arguments() -> None:
    runtime = plan(DRAFT.vllm_args(), {})
    assert runtime.engine == DRAFT
    assert runtime.settings.health_port == HEALTH_PORT
    assert runtime.settings.drain_seconds == DRAIN_SECONDS


def test_environment_sets_ports_deadline_and_node_flags() -> None:
    env = {
        ENV_HEALTH_PORT: "9100",
        ENV_DRAIN_SECONDS: "7.5",
        ENV_EXTRA_ARGS: "--enforce-eager --dtype 'float32'",
    }
    settings = plan(DRAFT.vllm_args(), env).settings
    assert (settings.health_port, settings.drain_seconds) == (9100, 7.5)
    assert settings.extra_engine_args == ("--enforce-eager", "--dtype", "float32")


def test_child_runs_the_serve_wrapper_with_node_flags_after_the_operators() -> None:
    runtime = plan(DRAFT.vllm_args(), {ENV_EXTRA_ARGS: "--enforce-eager"})
    argv = runtime.child_argv("/usr/bin/python3")
    assert argv[:3] == ["/usr/bin/python3", "-m", SERVE_MODULE]
    # With a batch-size table the live-table scheduler comes last, so no node flag can replace it.
    assert argv[3:] == [*DRAFT.vllm_args(), "--enforce-eager", "--scheduler-cls", LIVE_SCHEDULER]


@pytest.mark.parametrize("speculative", [None, SpeculativeConfig(method="ngram", k=3)])
def test_no_live_table_scheduler_without_a_table(speculative: SpeculativeConfig | None) -> None:
    config = EngineConfig(model="m", speculative=speculative)
    assert "--scheduler-cls" not in plan(config.vllm_args(), {}).child_argv("python3")


def test_node_flags_stay_out_of_the_config_hash() -> None:
    bare = plan(DRAFT.vllm_args(), {}).info_labels()
    with_flags = plan(DRAFT.vllm_args(), {ENV_EXTRA_ARGS: "--enforce-eager"}).info_labels()
    assert bare["config_hash"] == with_flags["config_hash"] == DRAFT.config_hash()


def test_child_env_carries_the_info_labels() -> None:
    runtime = plan(DRAFT.vllm_args(), {})
    env = runtime.child_env({"HOME": "/home/app"})
    assert env["HOME"] == "/home/app"
    assert json.loads(env[ENV_ENGINE_INFO]) == runtime.info_labels()


def test_info_labels_name_method_k_draft_and_table() -> None:
    labels = engine_info_labels(DRAFT)
    assert tuple(labels) == INFO_LABELS
    assert labels["method"] == "draft_model"
    assert labels["k"] == "4"
    assert labels["draft_model"] == "tiny-draft"
    assert json.loads(labels["schedule"]) == [[1, 2, 4], [3, 8, 2]]
    assert labels["model"] == "llama"


def test_info_labels_without_speculation() -> None:
    labels = engine_info_labels(EngineConfig(model="m"))
    assert (labels["method"], labels["k"], labels["draft_model"], labels["schedule"]) == ("off", "0", "", "")
    assert labels["model"] == "m"


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({ENV_HEALTH_PORT: "http"}, ENV_HEALTH_PORT),
        ({ENV_HEALTH_PORT: "70000"}, ENV_HEALTH_PORT),
        ({ENV_DRAIN_SECONDS: "-1"}, ENV_DRAIN_SECONDS),
        ({ENV_DRAIN_SECONDS: "soon"}, ENV_DRAIN_SECONDS),
        ({ENV_EXTRA_ARGS: "--flag 'unclosed"}, ENV_EXTRA_ARGS),
    ],
)
def test_bad_environment_names_the_variable(env: dict[str, str], field: str) -> None:
    with pytest.raises(EngineConfigError, match=field):
        plan(DRAFT.vllm_args(), env)


def test_no_arguments_is_an_error() -> None:
    with pytest.raises(EngineConfigError, match="args"):
        plan([], {})


def test_operators_hash_labels_the_metric_and_skew_is_reported() -> None:
    agreeing = plan(DRAFT.vllm_args(), {ENV_CONFIG_HASH: DRAFT.config_hash()})
    assert agreeing.hash_mismatch() is None
    skewed = plan(DRAFT.vllm_args(), {ENV_CONFIG_HASH: "0123456789"})
    assert skewed.info_labels()["config_hash"] == "0123456789"
    assert ENV_CONFIG_HASH in (skewed.hash_mismatch() or "")

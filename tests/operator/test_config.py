from __future__ import annotations

import argparse

import pytest

from specfleet.operator.config import OperatorConfig, add_arguments, config_from


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults() -> None:
    assert config_from({}) == OperatorConfig()


def test_environment_then_flags() -> None:
    env = {
        "SPECFLEET_NAMESPACES": "a, b",
        "SPECFLEET_PROMETHEUS_URL": "http://prom:9090",
        "SPECFLEET_HEALTH_PORT": "81",
    }
    config = config_from(env, _args("--prometheus-url", "http://other:9090", "--namespace", "c"))
    assert config.namespaces == ("c",)
    assert config.prometheus_url == "http://other:9090"
    assert config.health_port == 81
    assert config_from(env).namespaces == ("a", "b")


def test_bad_log_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log format"):
        config_from({"SPECFLEET_LOG_FORMAT": "xml"})

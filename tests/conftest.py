"""Suite-wide configuration: shared fixtures are plugins under tests/fixtures/."""

from __future__ import annotations

pytest_plugins = [
    "tests.fixtures.operator",
    "tests.fixtures.deps",
    "tests.fixtures.cluster",
    "tests.fixtures.vllm",
    "tests.fixtures.prometheus",
]

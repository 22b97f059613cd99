"""Run Prometheus' own promtool on rules the chart renders: syntax checks and rule unit tests, offline."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.deps import require_binary

TIMEOUT_SECONDS = 60


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = require_binary("promtool")
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=TIMEOUT_SECONDS, cwd=cwd, check=False
    )


def check_rules(groups: Sequence[Mapping[str, Any]], directory: Path) -> subprocess.CompletedProcess[str]:
    """`promtool check rules` on the groups (PromQL syntax, templates in annotations, duplicate names)."""
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": list(groups)}))
    return _promtool("check", "rules", path.name, cwd=directory)


def run_rule_tests(
    groups: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]], directory: Path
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` with the given unit tests (input_series, alert_rule_test, promql_expr_test)."""
    (directory / "rules.yaml").write_text(yaml.safe_dump({"groups": list(groups)}))
    suite = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": list(tests)}
    (directory / "suite.yaml").write_text(yaml.safe_dump(suite))
    return _promtool("test", "rules", "suite.yaml", cwd=directory)


def series(name: str, labels: Mapping[str, str], values: Sequence[float]) -> dict[str, str]:
    """One input series in promtool's notation."""
    selector = ", ".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return {"series": f"{name}{{{selector}}}", "values": " ".join(f"{value:g}" for value in values)}


def counter(per_minute: float, minutes: int) -> list[float]:
    """Samples of a counter growing by `per_minute` each minute."""
    return [per_minute * minute for minute in range(minutes + 1)]

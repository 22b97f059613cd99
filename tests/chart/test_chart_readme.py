"""The chart's README: its values table is what scripts/chart_readme.py makes of the schema and values.yaml."""

from __future__ import annotations

import json
import re

import yaml

from scripts.chart_readme import README, main, value_comments, values_table, with_table
from tests.chart.helm import CHART


def _table_rows() -> dict[str, list[str]]:
    """Key -> its cells (type, default, description), as the README shows them."""
    found = re.findall(r"^\| `([\w.]+)` \| (.*) \|$", README.read_text(), re.MULTILINE)
    return {key: re.split(r"(?<!\\) \| ", cells) for key, cells in found}


def test_readme_values_table_is_the_generated_one() -> None:
    text = README.read_text()
    assert with_table(text, values_table()) == text, "run `python3 -m scripts.chart_readme --write`"
    assert main(["--check"]) == 0


def test_table_has_every_value_with_its_default_and_comment() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    comments = value_comments((CHART / "values.yaml").read_text())
    table = _table_rows()
    log_format = ["string: `plain`, `full`, `json`", '`"json"`', comments["operator.logFormat"]]
    assert table["operator.logFormat"] == log_format
    assert table["podDisruptionBudget.maxUnavailable"][:2] == ["integer or string", "`1`"]
    # A free-form object is one row, its default as JSON; so is the policy spec, whose fields the CRD documents.
    assert table["resources.requests"][1] == f"`{json.dumps(values['resources']['requests'])}`"
    assert table["defaultPolicy.spec"][1] == "`{}`"
    assert not any(key.startswith("defaultPolicy.spec.") for key in table)
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert {key.split(".")[0] for key in table} == set(schema["properties"])


def test_comments_are_read_from_their_dash_dash_line_on() -> None:
    text = "# File header.\n\nimage:\n  # Not this.\n  # -- Operator image\n  # repository.\n  repository: x\n"
    assert value_comments(text) == {"image.repository": "Operator image repository."}

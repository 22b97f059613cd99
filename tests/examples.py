"""The example resources shipped in examples/, loaded for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
INVALID = EXAMPLES / "invalid"


def load(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


def valid_examples(kind: str = "SpecDecodeDeployment") -> list[Path]:
    return sorted(p for p in EXAMPLES.glob("*.yaml") if load(p)["kind"] == kind)


def invalid_examples() -> list[Path]:
    return sorted(INVALID.glob("*.yaml"))


def expected_error(path: Path) -> str:
    """The `# expect: ...` line at the top of an invalid example."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path} lacks an '# expect:' line"
    return first.removeprefix("# expect: ").strip()

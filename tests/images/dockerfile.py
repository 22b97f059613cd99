"""The repository's Dockerfile read as its stages: what each `FROM ... AS name` holds up to the next FROM."""

from __future__ import annotations

import re
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


def stages() -> dict[str, str]:
    """Each named stage's body (the lines after its FROM)."""
    text = DOCKERFILE.read_text()
    return dict(re.findall(r"^FROM \S+ AS (\w+)$(.*?)(?=^FROM |\Z)", text, re.MULTILINE | re.DOTALL))


def stage(name: str) -> str:
    found = stages()
    assert name in found, f"no stage {name}"
    return found[name]

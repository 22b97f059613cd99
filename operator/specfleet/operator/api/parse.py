"""Parse a resource's spec into types, with an error message an SRE can act on. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from specfleet.operator.api.types import NAME_INVALID, NAME_PATTERN, SpecDecodeDeploymentSpec


class InvalidSpecError(ValueError):
    """The spec cannot be served; the message says where and why."""


def parse_spec(raw: Any) -> SpecDecodeDeploymentSpec:
    try:
        return SpecDecodeDeploymentSpec.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        raise InvalidSpecError(describe_errors(exc, root="spec")) from exc


def parse_resource(body: dict[str, Any]) -> SpecDecodeDeploymentSpec:
    """A whole SpecDecodeDeployment: its name (which names its children) and its spec."""
    check_name(str(body.get("metadata", {}).get("name", "")))
    return parse_spec(body.get("spec"))


def check_name(name: str) -> None:
    """The resource's name must be usable for its children (the CRD's root rule says the same)."""
    if len(name) > 63 or not NAME_PATTERN.match(name):
        raise InvalidSpecError(NAME_INVALID)


def describe_errors(exc: ValidationError, root: str) -> str:
    """`spec.speculation: draftModel is required ...; spec.runtime.extraArgs[0]: ...` — one clause per error.
    An empty root names the paths from the top of the document (`sources[0].url`)."""
    clauses = []
    for error in exc.errors(include_url=False):
        path = (root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])).lstrip(".")
        message = str(error["msg"]).removeprefix("Value error, ")
        clauses.append(f"{path}: {message}")
    return "; ".join(clauses)

"""What every API type shares: the wire conventions and the CEL rule entries of the CRD schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict


class ApiModel(BaseModel):
    """Base for every API object: camelCase on the wire, snake_case in Python, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=True,
    )

    def to_api(self) -> dict[str, Any]:
        """The object as the Kubernetes API holds it (camelCase, unset optionals left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def cel(rule: str, message: str) -> JsonDict:
    """One `x-kubernetes-validations` entry."""
    return {"rule": rule, "message": message}

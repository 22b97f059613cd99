"""Hypothesis strategies from a CRD's openAPIV3Schema: documents the schema allows, and targeted mutations.

Only the keywords the generated CRDs use are understood (type, properties, required, items, enum, pattern,
min/max, lengths, maxItems, preserve-unknown-fields); the CEL rules are not modelled on purpose, so a share of
the "valid" documents still breaks a cross-field rule and must be refused by the API.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

MAX_TEXT = 24  # generated strings stay short: the interesting cases are shapes, not sizes
MAX_ITEMS = 3
# Values that break types, bounds and parsers when dropped anywhere in a document.
HOSTILE_VALUES: tuple[Any, ...] = (
    None,
    -1,
    0,
    10**12,
    -(10**12),
    1.5,
    True,
    "",
    "x" * 5000,
    "NaN",
    "'; rm -rf / #",
    'a"} or vector(1) or {b="',
    "$(reboot)\n--trust-remote-code",
    [],
    {},
    {"unknown": "field"},
    ["--model", "evil"],
)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that satisfy `schema`'s structural rules."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return _object(schema)
    if kind == "array":
        size = min(schema.get("maxItems", MAX_ITEMS), MAX_ITEMS)
        return st.lists(from_schema(schema.get("items", {})), max_size=size)
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "number":
        low = schema.get("minimum")
        return st.floats(
            low,
            schema.get("maximum"),
            allow_nan=False,
            allow_infinity=False,
            exclude_min=bool(schema.get("exclusiveMinimum")) and low is not None,
        )
    if kind == "boolean":
        return st.booleans()
    return st.one_of(st.integers(0, 100), st.text(string.ascii_letters, max_size=8))  # int-or-string


def _object(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties")
    if not properties:  # a free-form map (preserve-unknown-fields, additionalProperties)
        values = schema.get("additionalProperties")
        inner = from_schema(values) if isinstance(values, dict) else st.text(max_size=8)
        return st.dictionaries(st.text(string.ascii_letters, min_size=1, max_size=8), inner, max_size=MAX_ITEMS)
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {key: from_schema(value) for key, value in properties.items() if key in required},
        optional={key: from_schema(value) for key, value in properties.items() if key not in required},
    )


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = schema.get("minLength", 0), min(schema.get("maxLength", MAX_TEXT), MAX_TEXT)
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(
            lambda s: low <= len(s) <= schema.get("maxLength", 10**6)
        )
    return st.text(min_size=low, max_size=max(low, high))


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a JSON document (keys and list indexes), the root excluded."""
    found: list[tuple[Any, ...]] = []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found.append((*prefix, key))
        found.extend(paths(child, (*prefix, key)))
    return found


@st.composite
def mutated(draw: st.DrawFn, documents: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A document with one location replaced by a hostile value, or removed."""
    document = draw(documents)
    locations = paths(document)
    if not locations:
        return document
    location = draw(st.sampled_from(locations))
    parent: Any = document
    for key in location[:-1]:
        parent = parent[key]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[location[-1]]
    else:
        parent[location[-1]] = draw(st.sampled_from(HOSTILE_VALUES))
    return document

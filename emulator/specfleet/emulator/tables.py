"""`as=Table` responses (what `kubectl get` prints), with a CRD's additionalPrinterColumns."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

from specfleet.emulator.resources import ResourceType

_TOKEN = re.compile(r"""\.([\w-]+)|\[(\d+)\]|\[\?\(@\.([\w.-]+)\s*==\s*["']([^"']*)["']\)\]|\['([^']+)'\]""")
_NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name of the object",
    "priority": 0,
}
_AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a Table (kubectl get sends `application/json;as=Table;...`)."""
    return "as=Table" in accept.replace(" ", "")


def json_path(obj: Any, path: str) -> list[Any]:
    """Values at a simple JSONPath: `.a.b`, `[0]`, `['x.y']`, `[?(@.type=="Ready")]` — what columns use."""
    values = [obj]
    for match in _TOKEN.finditer(path.strip().strip("{}").lstrip("$")):
        key, index, filter_key, filter_value, quoted = match.groups()
        found: list[Any] = []
        for value in values:
            if (key or quoted) and isinstance(value, dict) and (key or quoted) in value:
                found.append(value[key or quoted])
            elif index is not None and isinstance(value, list) and int(index) < len(value):
                found.append(value[int(index)])
            elif filter_key is not None and isinstance(value, list):
                found += [item for item in value if _field_is(item, filter_key, filter_value)]
        values = found
    return values


def _field_is(item: Any, dotted: str, expected: str) -> bool:
    return [str(value) for value in json_path(item, "." + dotted)] == [expected]


def _age(timestamp: str) -> str:
    """How kubectl shows an age: 5s, 3m, 2h, 4d."""
    created = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    seconds = int((datetime.datetime.now(tz=datetime.UTC) - created).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size or (unit == "m" and seconds >= size):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _cell(obj: dict[str, Any], column: dict[str, Any]) -> Any:
    values = json_path(obj, column["jsonPath"])
    if not values or values[0] is None:
        return None
    value = values[0]
    if column.get("type") == "date" and isinstance(value, str):
        return _age(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def columns_of(rt: ResourceType) -> list[dict[str, Any]]:
    return list(rt.printer_columns) or [_AGE_COLUMN]


def table(rt: ResourceType, objects: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table: a Name column, the printer columns, one row per object (object included)."""
    columns = columns_of(rt)
    definitions = [_NAME_COLUMN] + [
        {
            "name": column["name"],
            "type": "string" if column.get("type") == "date" else column.get("type", "string"),
            "format": column.get("format", ""),
            "description": column.get("description", ""),
            "priority": column.get("priority", 0),
        }
        for column in columns
    ]
    rows = [
        {"cells": [obj["metadata"]["name"]] + [_cell(obj, column) for column in columns], "object": obj}
        for obj in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }

"""Structural-schema handling of custom resources, in kube-apiserver's order: prune, default, validate.

Messages follow the apiserver's wording (`spec.replicas: Invalid value: -1: spec.replicas in body should
be greater than or equal to 0`), so tests and users see what a real cluster would say.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
from collections.abc import Iterator
from typing import Any

Cause = dict[str, str]
Schema = dict[str, Any]

# Kept at the top level of every object whatever the schema says (the apiserver handles them itself).
_ENVELOPE = ("apiVersion", "kind", "metadata")
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "number": (int, float),
    "integer": (int,),
}


def shown(value: Any) -> str:
    """A value as field errors print it: strings quoted, containers by their type name."""
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return json.dumps(value)


def cause(field: str, reason: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def child_schemas(value: Any, schema: Schema, path: str) -> Iterator[tuple[Any, Schema, str]]:
    """(child value, child schema, child path) for every child the schema describes."""
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            if key in properties:
                yield child, properties[key], f"{path}.{key}" if path else key
            elif isinstance(extra, dict):
                yield child, extra, f"{path}[{key}]"
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, child in enumerate(value):
            yield child, schema["items"], f"{path}[{index}]"


def prune(value: Any, schema: Schema, root: bool = False, dropped: list[str] | None = None, path: str = "") -> Any:
    """Drop fields the schema does not declare, unless it preserves unknown fields; their paths go to `dropped`.

    As in the apiserver, an object schema without properties keeps nothing unless it says
    `x-kubernetes-preserve-unknown-fields` or gives `additionalProperties`.
    """
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(item, schema["items"], False, dropped, f"{path}[{i}]") for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True
    kept = {}
    for key, child in value.items():
        where = f"{path}.{key}" if path else key
        if root and key in _ENVELOPE:
            kept[key] = child  # metadata is the apiserver's business, not the schema's
        elif key in properties:
            kept[key] = prune(child, properties[key], False, dropped, where)
        elif isinstance(extra, dict):
            kept[key] = prune(child, extra, False, dropped, f"{path}[{key}]")
        elif keep_unknown:
            kept[key] = child
        elif dropped is not None:
            dropped.append(where)
    return kept


def unknown_fields(value: Any, schema: Schema) -> list[str]:
    """Paths of the fields of an object (or a patch of one) that pruning would drop."""
    dropped: list[str] = []
    prune(value, schema, root=True, dropped=dropped)
    return dropped


def apply_defaults(value: Any, schema: Schema) -> Any:
    """Fill absent (or null, non-nullable) properties that declare a `default`, at every present level."""
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            absent = key not in value or (value[key] is None and not sub.get("nullable"))
            if absent and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
    for child, sub, _ in child_schemas(value, schema, ""):
        apply_defaults(child, sub)
    return value


def _type_ok(value: Any, schema: Schema) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, int | str) and not isinstance(value, bool)
    expected = schema.get("type")
    if expected is None:
        return True
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(expected, (object,))) and (expected == "boolean" or not isinstance(value, bool))


def _bounds(value: Any, schema: Schema, path: str) -> list[Cause]:
    causes = []
    bad = f"Invalid value: {shown(value)}: {path} in body"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema:
            exclusive = schema.get("exclusiveMinimum")
            if value < schema["minimum"] or (exclusive and value == schema["minimum"]):
                relation = "greater than" if exclusive else "greater than or equal to"
                causes.append(cause(path, "FieldValueInvalid", f"{bad} should be {relation} {schema['minimum']}"))
        if "maximum" in schema:
            exclusive = schema.get("exclusiveMaximum")
            if value > schema["maximum"] or (exclusive and value == schema["maximum"]):
                relation = "less than" if exclusive else "less than or equal to"
                causes.append(cause(path, "FieldValueInvalid", f"{bad} should be {relation} {schema['maximum']}"))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            causes.append(
                cause(path, "FieldValueInvalid", f"{bad} should be at least {schema['minLength']} chars long")
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(cause(path, "FieldValueTooLong", f"Too long: may not be longer than {schema['maxLength']}"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            causes.append(cause(path, "FieldValueInvalid", f"{bad} should match '{schema['pattern']}'"))
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            message = f"Too many: {len(value)}: must have at most {schema['maxItems']} items"
            causes.append(cause(path, "FieldValueTooMany", message))
        if len(value) < schema.get("minItems", 0):
            message = f"Invalid value: {len(value)}: {path} in body should have at least {schema['minItems']} items"
            causes.append(cause(path, "FieldValueInvalid", message))
    if isinstance(value, dict) and "maxProperties" in schema and len(value) > schema["maxProperties"]:
        message = f"Too many: {len(value)}: must have at most {schema['maxProperties']} items"
        causes.append(cause(path, "FieldValueTooMany", message))
    return causes


# kube-openapi's strfmt date-time: a full date, `t`, a time with seconds, an optional fraction, `z` or ±hh:mm.
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$", re.ASCII)
_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?(z|[+-]\d{2}:\d{2})$", re.ASCII)


def is_date_time(text: str) -> bool:
    """Whether the apiserver takes `text` as `format: date-time`."""
    parts = text.lower().split("t")
    if len(parts) != 2 or not (date := _DATE.match(parts[0])) or not (time := _TIME.match(parts[1])):
        return False
    try:
        datetime.date(*(int(group) for group in date.groups()))
    except ValueError:
        return False
    hour, minute, second = (int(group) for group in time.groups()[:3])
    return hour < 24 and minute < 60 and second < 60


def _format(value: Any, schema: Schema, path: str) -> list[Cause]:
    if schema.get("format") == "date-time" and isinstance(value, str) and not is_date_time(value):
        message = f"Invalid value: {shown(value)}: {path} in body must be of type date-time: {shown(value)}"
        return [cause(path, "FieldValueInvalid", message)]
    return []


def _list_keys(value: Any, schema: Schema, path: str) -> list[Cause]:
    """`x-kubernetes-list-type: map` items are unique by their keys, `set` items by value, as the apiserver checks."""
    kind = schema.get("x-kubernetes-list-type")
    if not isinstance(value, list) or kind not in {"map", "set"}:
        return []
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: set[str] = set()
    causes = []
    for index, item in enumerate(value):
        key = {name: item.get(name) for name in keys} if kind == "map" and isinstance(item, dict) else item
        identity = json.dumps(key, sort_keys=True)
        if identity in seen:
            causes.append(cause(f"{path}[{index}]", "FieldValueDuplicate", f"Duplicate value: {identity}"))
        seen.add(identity)
    return causes


def validate(value: Any, schema: Schema, path: str = "") -> list[Cause]:
    """Every violation of the schema's structural constraints, deepest last."""
    if value is None:
        if schema.get("nullable"):
            return []
        return [
            cause(
                path,
                "FieldValueInvalid",
                f'Invalid value: "null": {path} in body must be of type {schema.get("type")}: "null"',
            )
        ]
    if not _type_ok(value, schema):
        actual = shown(value).strip('"') if isinstance(value, dict | list) else type_name(value)
        message = f'Invalid value: "{actual}": {path} in body must be of type {schema.get("type")}: "{actual}"'
        return [cause(path, "FieldValueInvalid", message)]
    causes: list[Cause] = []
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(shown(option) for option in schema["enum"])
        causes.append(
            cause(
                path,
                "FieldValueNotSupported",
                f"Unsupported value: {shown(value)}: supported values: {supported}",
            )
        )
    causes += _bounds(value, schema, path) + _format(value, schema, path) + _list_keys(value, schema, path)
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                causes.append(cause(f"{path}.{key}" if path else key, "FieldValueRequired", "Required value"))
    for child, sub, child_path in child_schemas(value, schema, path):
        causes += validate(child, sub, child_path)
    return causes


def type_name(value: Any) -> str:
    """The OpenAPI type name of a JSON value."""
    for name in ("boolean", "integer", "number", "string", "object", "array"):
        if isinstance(value, _TYPES[name]) and (name == "boolean" or not isinstance(value, bool)):
            return name
    return type(value).__name__

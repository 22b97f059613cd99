"""Field sets, as Server-Side Apply tracks ownership: which fields an object sets, in managedFields' notation.

A path is a tuple of elements written as the API server writes them in `fieldsV1`: `f:name` for a field,
`k:{"name":"engine"}` for an item of a list keyed by some of its fields (containers by name, ports by
containerPort and protocol), `v:"x"` for an item of a list that is a set. A set's members are what an owner
owns: scalars, atomic lists and objects (replaced whole), empty objects, keyed list items and map entries.
How a list or object is merged comes from a `Shapes` lookup: the CRD's structural schema
(`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`) or the built-in kinds'
table below (their Go types' markers). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Path = tuple[str, ...]
# A member's value for comparisons: the value itself, or PRESENT for a list item or map entry that holds fields.
PRESENT = "<present>"


@dataclass(frozen=True)
class Shape:
    """How the API server merges one node: a list's type and keys, an object's granularity."""

    list_type: str = "atomic"  # atomic (replaced whole), set (items by value), map (items by `keys`)
    keys: tuple[str, ...] = ()
    atomic: bool = False  # an object replaced whole (a label selector)
    is_map: bool = False  # an object with arbitrary keys (labels), whose entries are members themselves


# The shape of the node at a path of field names (list items are not named): (`spec`, `containers`, `ports`).
Shapes = Callable[[tuple[str, ...]], Shape]

_KEYED_LISTS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",),
    "resourceClaims": ("name",),
    "ownerReferences": ("uid",),
    "conditions": ("type",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_SET_LISTS = ("finalizers",)
_ATOMIC_OBJECTS = ("selector", "labelSelector", "namespaceSelector", "podSelector")
_MAP_OBJECTS = ("labels", "annotations", "nodeSelector", "matchLabels", "limits", "requests", "data", "stringData")
# Key fields the API server defaults before it keys an item (a port's protocol).
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


def builtin_shape(names: tuple[str, ...]) -> Shape:
    """The shape of a field of the built-in kinds (Deployment, Service, Pod, ...) and of every object's metadata."""
    if not names:
        return Shape()
    name = names[-1]
    if name == "ports":  # a container's ports are keyed by containerPort, a Service's by port
        container = len(names) > 1 and names[-2] in _CONTAINER_LISTS
        return Shape("map", ("containerPort", "protocol") if container else ("port", "protocol"))
    if name in _KEYED_LISTS:
        return Shape("map", _KEYED_LISTS[name])
    if name in _SET_LISTS:
        return Shape("set")
    return Shape(atomic=name in _ATOMIC_OBJECTS, is_map=name in _MAP_OBJECTS)


def schema_shapes(schema: Mapping[str, Any]) -> Shapes:
    """Shapes from a CRD's structural schema; metadata follows the built-in rules, as on a real server."""

    def shape(names: tuple[str, ...]) -> Shape:
        if names[:1] == ("metadata",):
            return builtin_shape(names)
        node = _schema_at(schema, names)
        if node is None:
            return Shape()
        if node.get("type") == "array":
            keys = tuple(node.get("x-kubernetes-list-map-keys") or ())
            return Shape(str(node.get("x-kubernetes-list-type") or "atomic"), keys)
        extra = node.get("additionalProperties")
        return Shape(atomic=node.get("x-kubernetes-map-type") == "atomic", is_map=isinstance(extra, dict))

    return shape


def _schema_at(schema: Mapping[str, Any], names: tuple[str, ...]) -> Mapping[str, Any] | None:
    node: Mapping[str, Any] | None = schema
    for name in names:
        while node is not None and node.get("type") == "array":  # a list's items are not named in the path
            node = node.get("items")
        if node is None:
            return None
        properties = node.get("properties") or {}
        extra = node.get("additionalProperties")
        node = properties.get(name) or (extra if isinstance(extra, dict) else None)
    return node


# --- elements ----------------------------------------------------------------------------------


def field(name: str) -> str:
    return f"f:{name}"


def item_key(item: Mapping[str, Any], keys: Iterable[str]) -> str:
    """The element of a keyed list's item: its key fields (defaulted as the server defaults them), sorted."""
    values = {key: item.get(key, KEY_DEFAULTS.get(key)) for key in sorted(keys)}
    return "k:" + _json({key: value for key, value in values.items() if value is not None})


def set_value(value: Any) -> str:
    return "v:" + _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def shown(path: Path) -> str:
    """A path as conflict messages print it: `.spec.template.spec.containers[name="engine"].image`."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            text += f".{rest}"
        elif kind == "k":
            text += "[" + ",".join(f"{key}={_json(value)}" for key, value in json.loads(rest).items()) + "]"
        else:
            text += f"[={rest}]"
    return text


# --- field sets --------------------------------------------------------------------------------


def members(obj: Mapping[str, Any], shapes: Shapes) -> dict[Path, Any]:
    """Every member of an object's field set, with the value it holds (what Server-Side Apply owns)."""
    found: dict[Path, Any] = {}
    _object(obj, (), (), shapes, found)
    return found


def _object(obj: Mapping[str, Any], path: Path, names: tuple[str, ...], shapes: Shapes, found: dict[Path, Any]) -> None:
    entries_are_members = shapes(names).is_map
    for key, value in obj.items():
        child, child_names = (*path, field(key)), (*names, key)
        if entries_are_members or value is None or value == {}:
            found[child] = PRESENT if isinstance(value, dict) and value else value
        _value(value, child, child_names, shapes, found)


def _value(value: Any, path: Path, names: tuple[str, ...], shapes: Shapes, found: dict[Path, Any]) -> None:
    if isinstance(value, dict):
        if shapes(names).atomic:
            found[path] = value
        elif value:
            _object(value, path, names, shapes, found)
    elif isinstance(value, list):
        _list(value, path, names, shapes, found)
    elif value is not None:
        found[path] = value


def _list(items: list[Any], path: Path, names: tuple[str, ...], shapes: Shapes, found: dict[Path, Any]) -> None:
    shape = shapes(names)
    if shape.list_type == "set":
        found.update({(*path, set_value(item)): item for item in items})
    elif shape.list_type == "map" and all(isinstance(item, dict) for item in items):
        for item in items:
            element = (*path, item_key(item, shape.keys))
            found[element] = PRESENT
            _object(item, element, names, shapes, found)
    else:
        found[path] = items


def compare(old: Mapping[Path, Any], new: Mapping[Path, Any]) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, modified, removed) members between two field sets."""
    added = new.keys() - old.keys()
    removed = old.keys() - new.keys()
    modified = {path for path in new.keys() & old.keys() if new[path] != old[path]}
    return set(added), modified, set(removed)


def within(path: Path, prefix: Path) -> bool:
    return path[: len(prefix)] == prefix


# --- fieldsV1 ------------------------------------------------------------------------------------


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The `fieldsV1` tree of a set: `.` marks a member that also has members below it."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _rendered(tree)


def _rendered(node: dict[str, Any]) -> dict[str, Any]:
    children = {key: _rendered(value) for key, value in sorted(node.items()) if key != "."}
    return {".": {}, **children} if "." in node and children else children


def from_fields_v1(tree: Mapping[str, Any], path: Path = ()) -> set[Path]:
    """The set a `fieldsV1` tree describes."""
    found: set[Path] = set()
    for key, value in tree.items():
        if key == ".":
            found.add(path)
        elif isinstance(value, Mapping) and value:
            found |= from_fields_v1(value, (*path, key))
        else:
            found.add((*path, key))
    return found

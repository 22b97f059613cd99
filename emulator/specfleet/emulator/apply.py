"""Server-Side Apply and field ownership (metadata.managedFields), as kube-apiserver does them.

Every write records who set which fields. An Update (POST, PUT, merge/strategic/JSON patch) gives its
manager the fields it changed and takes them from everybody else. An Apply (`PATCH` with
`application/apply-patch+yaml`) declares the fields its manager wants: they are merged into the object,
the fields it applied last time and no longer applies are removed unless another manager owns them too,
and changing a value another manager owns is a 409 Conflict naming field and manager, unless `force`
takes the field over. The merge and set logic is pure; `serve_apply` is the store-facing step.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from specfleet.emulator import errors, fieldsets
from specfleet.emulator.fieldsets import Path, Shapes
from specfleet.emulator.patching import APPLY_PATCH
from specfleet.emulator.resources import ResourceType

if TYPE_CHECKING:
    from specfleet.emulator.store import Store

APPLY = "Apply"
UPDATE = "Update"
MAX_MANAGER_LENGTH = 128
# Set by the server, never owned: Server-Side Apply strips them from every field set.
_STRIPPED: tuple[Path, ...] = (
    ("f:apiVersion",),
    ("f:kind",),
    *(
        ("f:metadata", f"f:{name}")
        for name in (
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        )
    ),
)


@dataclass(frozen=True)
class Writer:
    """Who writes, how: the manager, Apply or Update, the subresource, and for an Apply its field set."""

    manager: str
    operation: str = UPDATE
    subresource: str | None = None
    applied: frozenset[Path] = field(default=frozenset())
    force: bool = False

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource or "")


def shapes_of(rt: ResourceType) -> Shapes:
    return fieldsets.schema_shapes(rt.schema) if rt.schema is not None else fieldsets.builtin_shape


def owned(obj: Mapping[str, Any], shapes: Shapes) -> dict[Path, Any]:
    """The members of an object's field set that can be owned."""
    return {
        path: value
        for path, value in fieldsets.members(obj, shapes).items()
        if not any(fieldsets.within(path, stripped) for stripped in _STRIPPED)
    }


# --- managedFields ---------------------------------------------------------------------------------


@dataclass
class _Entry:
    manager: str
    operation: str
    subresource: str
    api_version: str
    time: str | None
    fields: set[Path]

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_api(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = fieldsets.to_fields_v1(self.fields)
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _entries(obj: Mapping[str, Any] | None) -> list[_Entry]:
    raw = (obj or {}).get("metadata", {}).get("managedFields") or []
    return [
        _Entry(
            manager=str(entry.get("manager", "")),
            operation=str(entry.get("operation", UPDATE)),
            subresource=str(entry.get("subresource", "")),
            api_version=str(entry.get("apiVersion", "")),
            time=entry.get("time"),
            fields=fieldsets.from_fields_v1(entry.get("fieldsV1") or {}),
        )
        for entry in raw
        if isinstance(entry, dict)
    ]


def applied_before(obj: Mapping[str, Any] | None, writer: Writer) -> tuple[set[Path], set[Path]]:
    """(what this applier applied last time, what every other manager owns) on the stored object."""
    mine: set[Path] = set()
    others: set[Path] = set()
    for entry in _entries(obj):
        (mine if entry.identity == writer.identity else others).update(entry.fields)
    return mine, others


def managed_fields(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    writer: Writer,
    shapes: Shapes,
    api_version: str,
    now: str,
) -> list[dict[str, Any]]:
    """The managedFields of `new` as written by `writer` over `old` (None: created); raises a Conflict when an
    Apply without force would change a value another manager owns."""
    added, modified, removed = fieldsets.compare(owned(old or {}, shapes), owned(new, shapes))
    changed = added | modified
    entries = _entries(old)
    conflicts = {
        _who(entry): sorted(entry.fields & changed)
        for entry in entries
        if entry.identity != writer.identity and entry.fields & changed
    }
    if conflicts and writer.operation == APPLY and not writer.force:
        raise conflict_error(conflicts)
    mine = next((entry for entry in entries if entry.identity == writer.identity), None)
    before = set(mine.fields) if mine else set()
    for entry in entries:
        if entry is not mine:
            entry.fields -= changed
        entry.fields -= removed
    fields = set(writer.applied) - removed if writer.operation == APPLY else (before | changed) - removed
    if mine is None:
        mine = _Entry(writer.manager, writer.operation, writer.subresource or "", api_version, None, set())
        entries.append(mine)
    if fields != before or changed or removed or mine.time is None:
        mine.time, mine.api_version = now, api_version
    mine.fields = fields
    return [entry.to_api() for entry in entries if entry.fields]


def _who(entry: _Entry) -> str:
    """A manager as conflicts name it: an Update with the version and time of its write."""
    text = json.dumps(entry.manager)
    if entry.subresource:
        text += f" with subresource {json.dumps(entry.subresource)}"
    if entry.operation == UPDATE:
        text += f" using {entry.api_version}" + (f" at {entry.time}" if entry.time else "")
    return text


def conflict_error(conflicts: Mapping[str, list[Path]]) -> errors.ApiError:
    """409 Conflict worded as the API server words it, one cause per field."""
    named = [(who, path) for who, paths in sorted(conflicts.items()) for path in paths]
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": fieldsets.shown(path)}
        for who, path in named
    ]
    if len(named) == 1:
        who, path = named[0]
        message = f"Apply failed with 1 conflict: conflict with {who}: {fieldsets.shown(path)}"
    else:
        lines = []
        for who, paths in sorted(conflicts.items()):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {fieldsets.shown(path)}" for path in paths]
        message = f"Apply failed with {len(named)} conflicts: " + "\n".join(lines)
    return errors.ApiError(409, "Conflict", message, {"causes": causes})


# --- the merge -------------------------------------------------------------------------------------


def merge(live: Any, config: Any, shapes: Shapes, names: tuple[str, ...] = ()) -> Any:
    """`config` merged into `live` by the schema: objects field by field, keyed lists item by item, sets by
    value, atomic lists and objects replaced."""
    if isinstance(config, dict) and isinstance(live, dict) and not (names and shapes(names).atomic):
        merged = dict(live)
        for key, value in config.items():
            merged[key] = merge(live.get(key), value, shapes, (*names, key))
        return merged
    if isinstance(config, list) and isinstance(live, list):
        shape = shapes(names)
        if shape.list_type == "set":
            return [*live, *(item for item in config if item not in live)]
        if shape.list_type == "map" and all(isinstance(item, dict) for item in [*live, *config]):
            return _merge_keyed(live, config, shape.keys, shapes, names)
    return copy.deepcopy(config)


def _merge_keyed(
    live: list[Any], config: list[Any], keys: tuple[str, ...], shapes: Shapes, names: tuple[str, ...]
) -> list[Any]:
    merged = list(live)
    for item in config:
        key = fieldsets.item_key(item, keys)
        index = next((i for i, old in enumerate(merged) if fieldsets.item_key(old, keys) == key), None)
        if index is None:
            merged.append(copy.deepcopy(item))
        else:
            merged[index] = merge(merged[index], item, shapes, names)
    return merged


def pruned(obj: dict[str, Any], dropped: set[Path], kept: set[Path]) -> dict[str, Any]:
    """`obj` without the members in `dropped`; an item or entry stays (with its key) while anything `kept` lies
    under it, and an object or list the removal empties goes too."""
    result = copy.deepcopy(obj)
    for path in sorted(dropped, key=len):
        if not any(fieldsets.within(other, path) and other != path for other in kept) and not _is_key(path):
            _remove(result, path)
    return result


def _is_key(path: Path) -> bool:
    """A key field of a keyed list's item (its identity, removed only with the item)."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


def _remove(root: dict[str, Any], path: Path) -> None:
    chain: list[Any] = [root]
    for element in path[:-1]:
        child = _child(chain[-1], element)
        if child is None:
            return
        chain.append(child)
    kind, _, rest = path[-1].partition(":")
    node = chain[-1]
    if kind == "f" and isinstance(node, dict):
        node.pop(rest, None)
    elif isinstance(node, list):
        node[:] = [item for item in node if not _matches(item, kind, rest)]
    for parent, element, child in reversed(list(zip(chain, path, chain[1:], strict=False))):
        if child not in ({}, []) or not element.startswith("f:"):
            break
        parent.pop(element[2:], None)


def _child(node: Any, element: str) -> Any:
    kind, _, rest = element.partition(":")
    if kind == "f":
        return node.get(rest) if isinstance(node, dict) else None
    if isinstance(node, list):
        return next((item for item in node if _matches(item, kind, rest)), None)
    return None


def _matches(item: Any, kind: str, rest: str) -> bool:
    if kind == "v":
        return bool(item == json.loads(rest))
    if kind == "k" and isinstance(item, dict):
        key = json.loads(rest)
        return fieldsets.item_key(item, key) == f"k:{rest}"
    return False


# --- the request ----------------------------------------------------------------------------------


def field_manager(query: Mapping[str, str], headers: Mapping[str, str], applies: bool, patches: bool) -> str:
    """The request's manager: `fieldManager`, else (not for an Apply) the User-Agent's product, as the API
    server defaults it; invalid options are a 422 on PatchOptions."""
    manager = query.get("fieldManager", "")
    problems = []
    if applies and not manager:
        problems.append("fieldManager: Required value: is required for apply patch")
    if patches and not applies and "force" in query:
        problems.append("force: Forbidden: may not be specified for non-apply patch")
    if len(manager) > MAX_MANAGER_LENGTH:
        problems.append(f"fieldManager: Too long: may not be longer than {MAX_MANAGER_LENGTH}")
    if problems:
        summary = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise errors.ApiError(422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: {summary}')
    return manager or headers.get("User-Agent", "").split("/", 1)[0][:MAX_MANAGER_LENGTH]


def writer_of(
    verb: str, query: Mapping[str, str], headers: Mapping[str, str], subresource: str | None
) -> Writer | None:
    """The Update writer of a create, update or patch (an Apply makes its own writer in `serve_apply`)."""
    if verb not in ("create", "update", "patch") or headers.get("Content-Type", "").startswith(APPLY_PATCH):
        return None
    return Writer(field_manager(query, headers, applies=False, patches=verb == "patch"), UPDATE, subresource)


def _config_set(rt: ResourceType, config: dict[str, Any], subresource: str | None) -> frozenset[Path]:
    """The fields an Apply declares; the status of a resource with a status subresource is applied only
    through that subresource, and only the status there."""
    applied = owned(config, shapes_of(rt))
    if subresource == "status":
        return frozenset(path for path in applied if path[:1] == ("f:status",))
    if rt.status:
        return frozenset(path for path in applied if path[:1] != ("f:status",))
    return frozenset(applied)


def serve_apply(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    config: Any,
    query: Mapping[str, str],
    subresource: str | None,
) -> dict[str, Any]:
    """A Server-Side Apply request: create the object if absent, else merge, prune and write it."""
    manager = field_manager(query, {}, applies=True, patches=True)
    if subresource == "scale":
        raise errors.ApiError(415, "UnsupportedMediaType", "apply is not supported on the scale subresource")
    if not isinstance(config, dict):
        raise errors.bad_request("the body of the request must be a JSON or YAML object")
    for key in ("apiVersion", "kind"):
        if not config.get(key):
            raise errors.bad_request(f"{key} must be set in an applied configuration")
    if config.get("metadata", {}).get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({config['metadata']['name']}) does not match the name on the URL ({name})"
        )
    force = query.get("force", "false").lower() in ("true", "1")
    writer = Writer(manager, APPLY, subresource, _config_set(rt, config, subresource), force)
    live = store.get(rt, namespace, name) if store.exists(rt, namespace, name) else None
    shapes = shapes_of(rt)
    with store.written_by(writer):
        if live is None:
            return store.create(rt, namespace, {**config, "metadata": {**config.get("metadata", {}), "name": name}})
        mine, others = applied_before(live, writer)
        merged = pruned(merge(live, config, shapes), mine - writer.applied - others, set(writer.applied) | others)
        return store.update(rt, namespace, name, merged, subresource)

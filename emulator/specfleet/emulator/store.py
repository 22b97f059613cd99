"""Objects and their lifecycle: versions, conflicts, status split, validation, finalizers, GC, field owners.

Objects live in kmock's ObjectsArray (one history per object, soft-deleted when gone), keyed by
group and plural: every served version of a resource sees the same objects, as with CRDs whose
conversion strategy is None. Every method runs on the emulator's event loop and never awaits,
so each write is atomic without locks.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import kmock

from specfleet.emulator import dryrun, errors, gc, metadata, schema
from specfleet.emulator.admission import admit, is_crd
from specfleet.emulator.apply import Writer, managed_fields, shapes_of
from specfleet.emulator.cel import check_rules
from specfleet.emulator.patching import (
    PatchError,
    UnsupportedPatchTypeError,
    apply_patch,
)
from specfleet.emulator.resources import Registry, ResourceType
from specfleet.emulator.scale import scale_of, with_replicas
from specfleet.emulator.selectors import Matcher
from specfleet.emulator.watching import Change, ChangeLog

Key = tuple[kmock.resource, str | None, str]
_VERSIONS_KEPT = 20  # per object, in kmock's history: enough for assertions, bounded for long demos


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


class Store:
    def __init__(self, objects: kmock.ObjectsArray, history_limit: int) -> None:
        self.registry = Registry()
        self.objects = objects
        self.log = ChangeLog(history_limit)
        self._rv = 0
        self.dry = False  # inside `dry_run`: writes are checked and answered, never stored
        self.writer: Writer | None = None  # inside `written_by`: whom managedFields credit with a write

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    # --- reading -------------------------------------------------------------------------------

    @staticmethod
    def _key(rt: ResourceType, namespace: str | None, name: str) -> Key:
        return (kmock.resource(group=rt.group, plural=rt.plural), namespace if rt.namespaced else None, name)

    def _stored(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = self._key(rt, namespace, name)
        if key not in self.objects or self.objects[key].deleted:
            return None
        stored: dict[str, Any] = self.objects[key].raw
        return stored

    @staticmethod
    def view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """A copy of a stored object as served through one version of its resource."""
        return {**copy.deepcopy(obj), "apiVersion": rt.api_version, "kind": rt.kind}

    def exists(self, rt: ResourceType, namespace: str | None, name: str) -> bool:
        return self._stored(rt, namespace, name) is not None

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self._stored(rt, namespace, name)
        if obj is None:
            raise errors.not_found(rt, name)
        return self.view(rt, obj)

    def select(self, rt: ResourceType, namespace: str | None, selects: Matcher) -> list[dict[str, Any]]:
        found = [
            self.view(rt, obj.raw)
            for (res, ns, _), obj in self.objects.items()
            if (res.group, res.plural) == (rt.group, rt.plural) and not obj.deleted
            if namespace is None or ns == namespace
        ]
        found = [obj for obj in found if selects(obj)]
        return sorted(found, key=lambda obj: (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    def _live(self) -> list[tuple[Key, dict[str, Any]]]:
        return [(key, obj.raw) for key, obj in self.objects.items() if not obj.deleted]

    # --- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def dry_run(self, on: bool) -> Iterator[None]:
        """Writes within run every check (validation, admission, conflicts) but persist nothing, bump no
        resourceVersion and notify no watcher; they answer the object as it would be stored."""
        was, self.dry = self.dry, on
        try:
            yield
        finally:
            self.dry = was

    @contextlib.contextmanager
    def written_by(self, writer: Writer | None) -> Iterator[None]:
        """Writes within record `writer` in managedFields (an Apply also checks its conflicts there)."""
        was, self.writer = self.writer, writer
        try:
            yield
        finally:
            self.writer = was

    def _own(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Credit the write's fields to its manager; in-process writes (fixtures, GC) credit nobody."""
        meta = _meta(new)
        if self.writer is not None:
            meta["managedFields"] = managed_fields(old, new, self.writer, shapes_of(rt), rt.api_version, metadata.now())
        elif old is not None and old["metadata"].get("managedFields"):
            meta["managedFields"] = old["metadata"]["managedFields"]
        else:
            meta.pop("managedFields", None)

    def _unstored(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        answer = self.view(rt, new)
        if old is None:
            return dryrun.as_created(answer)
        _meta(answer)["resourceVersion"] = old["metadata"]["resourceVersion"]
        return answer

    def _commit(self, rt: ResourceType, kind: str, new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        if self.dry:
            return self._unstored(rt, new, old)
        self._rv += 1
        stored = self.view(rt, new)
        _meta(stored)["resourceVersion"] = str(self._rv)
        key = self._key(rt, stored["metadata"].get("namespace"), stored["metadata"]["name"])
        if key not in self.objects:
            self.objects[key] = stored
        else:
            history = self.objects[key].history
            history.append(stored)
            del history[:-_VERSIONS_KEPT]
        self.log.append(Change(self._rv, kind, rt.group, rt.plural, stored, old))
        if is_crd(rt):
            self.registry.register_crd(stored)
        return self.view(rt, stored)

    def create(self, rt: ResourceType, namespace: str | None, body: Any) -> dict[str, Any]:
        obj = self._checked_body(rt, body)
        meta = _meta(obj)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = metadata.generated_name(meta["generateName"])
        name = meta.get("name") or ""
        if not name:
            raise errors.invalid(
                rt,
                "",
                [
                    schema.cause(
                        "metadata.name",
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                    )
                ],
            )
        self._place(rt, obj, namespace)
        if rt.group != "rbac.authorization.k8s.io" and not metadata.name_alphabet_ok(name):
            message = (
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of '
                "lower case alphanumeric characters, '-' or '.'"
            )
            raise errors.invalid(rt, name, [schema.cause("metadata.name", "FieldValueInvalid", message)])
        if self._stored(rt, meta.get("namespace"), name) is not None:
            raise errors.already_exists(rt, name)
        if rt.status:
            obj.pop("status", None)
        obj = self._validated(rt, name, obj, None)
        metadata.stamp_created(obj)
        _meta(obj).pop("resourceVersion", None)
        admit(rt, obj)
        self._own(rt, obj, None)
        return self._commit(rt, "ADDED", obj, None)

    def update(
        self, rt: ResourceType, namespace: str | None, name: str, body: Any, subresource: str | None
    ) -> dict[str, Any]:
        """PUT: replace the object (or only its status, or its scale)."""
        old = self._existing(rt, namespace, name)
        if subresource == "scale":
            return self._write_scale(rt, old, self._checked_scale(body))
        candidate = self._checked_body(rt, body)
        if _meta(candidate).get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({candidate['metadata']['name']}) does not match the name on the URL ({name})"
            )
        self._place(rt, candidate, namespace)
        return self._write(rt, old, candidate, subresource)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None,
    ) -> dict[str, Any]:
        old = self._existing(rt, namespace, name)
        if subresource == "scale":
            current = scale_of(self._scale_paths(rt), old)
            return self._write_scale(rt, old, self._patched(content_type, current, patch))
        candidate = self._patched(content_type, self.view(rt, old), patch)
        return self._write(rt, old, candidate, subresource)

    def scale(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        return scale_of(self._scale_paths(rt), self._existing(rt, namespace, name))

    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: dict[str, Any]) -> dict[str, Any]:
        """DELETE: mark if finalizers hold the object, remove otherwise (and collect its dependents)."""
        old = self._existing(rt, namespace, name)
        preconditions = options.get("preconditions") or {}
        for field in ("uid", "resourceVersion"):
            if preconditions.get(field) and preconditions[field] != old["metadata"].get(field):
                raise errors.conflict(rt, name)
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return self.view(rt, old)
            marked = copy.deepcopy(old)
            marked["metadata"].update(deletionTimestamp=metadata.now(), deletionGracePeriodSeconds=0)
            admit(rt, marked)
            return self._commit(rt, "MODIFIED", marked, old)
        return self._remove(rt, old, options.get("propagationPolicy", "Background"))

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, selects: Matcher, options: dict[str, Any]
    ) -> list[dict[str, Any]]:
        return [
            self.delete(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"], options)
            for obj in self.select(rt, namespace, selects)
        ]

    # --- the pieces of a write -----------------------------------------------------------------

    def _existing(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        old = self._stored(rt, namespace, name)
        if old is None:
            raise errors.not_found(rt, name)
        return old

    @staticmethod
    def _checked_body(rt: ResourceType, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON or YAML object")
        for field, expected in (("apiVersion", rt.api_version), ("kind", rt.kind)):
            if body.get(field, expected) != expected:
                raise errors.bad_request(
                    f"the API version in the data ({body.get('apiVersion')}) "
                    f"does not match the expected API version ({rt.api_version})"
                    if field == "apiVersion"
                    else f"the kind in the data ({body.get('kind')}) does not match the expected kind ({rt.kind})"
                )
        return {**copy.deepcopy(body), "apiVersion": rt.api_version, "kind": rt.kind}

    @staticmethod
    def _place(rt: ResourceType, obj: dict[str, Any], namespace: str | None) -> None:
        meta = _meta(obj)
        if not rt.namespaced:
            meta.pop("namespace", None)
            return
        if namespace and meta.get("namespace", namespace) != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace or meta.get("namespace") or "default"

    @staticmethod
    def _patched(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
        try:
            return apply_patch(content_type, target, patch)
        except UnsupportedPatchTypeError as exc:
            raise errors.ApiError(415, "UnsupportedMediaType", str(exc)) from exc
        except PatchError as exc:
            raise errors.ApiError(
                422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
            ) from exc

    def _validated(
        self, rt: ResourceType, name: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Prune, default and validate a custom resource against its CRD schema (CEL rules included)."""
        if rt.schema is None:
            return obj
        obj = schema.apply_defaults(schema.prune(obj, rt.schema, root=True), rt.schema)
        causes = schema.validate(obj, rt.schema)
        if not causes:
            causes = check_rules(obj, rt.schema) if old is None else check_rules(obj, rt.schema, old)
        if causes:
            raise errors.invalid(rt, name, causes)
        return obj

    def _write(
        self, rt: ResourceType, old: dict[str, Any], candidate: dict[str, Any], subresource: str | None
    ) -> dict[str, Any]:
        name = old["metadata"]["name"]
        sent_rv = candidate.get("metadata", {}).get("resourceVersion")
        if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt, name)
        new = copy.deepcopy(old) if subresource == "status" else candidate
        if subresource == "status":
            new.pop("status", None)
            new.update({"status": candidate["status"]} if "status" in candidate else {})
        elif rt.status:
            new.pop("status", None)
            new.update({"status": old["status"]} if "status" in old else {})
        new = self._validated(rt, name, new, old)
        metadata.keep_system_fields(new, old)
        if metadata.content_changed(new, old, rt.status):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        admit(rt, new)
        self._own(rt, new, old)
        if metadata.without_resource_version(new) == metadata.without_resource_version(old):
            return self.view(rt, old)  # a no-op write stores nothing and notifies nobody
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._remove(rt, new, "Background")
        return self._commit(rt, "MODIFIED", new, old)

    def _scale_paths(self, rt: ResourceType) -> Any:
        if rt.scale is None:
            raise errors.unknown_resource(f"{rt.qualified}/scale")
        return rt.scale

    def _checked_scale(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("spec", {}).get("replicas"), int):
            raise errors.bad_request("a Scale with an integer spec.replicas is expected")
        return body

    def _write_scale(self, rt: ResourceType, old: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
        paths = self._scale_paths(rt)
        sent_rv = scale.get("metadata", {}).get("resourceVersion")
        candidate = with_replicas(paths, old, scale["spec"]["replicas"])
        candidate["metadata"]["resourceVersion"] = sent_rv or old["metadata"]["resourceVersion"]
        return scale_of(paths, self._write(rt, old, candidate, None))

    def _remove(self, rt: ResourceType, obj: dict[str, Any], propagation: str) -> dict[str, Any]:
        if self.dry:  # nothing is removed, so nothing depending on it is collected either
            return self.view(rt, obj)
        self._rv += 1
        final = self.view(rt, obj)
        final["metadata"]["resourceVersion"] = str(self._rv)
        self.objects[self._key(rt, final["metadata"].get("namespace"), final["metadata"]["name"])].delete()
        self.log.append(Change(self._rv, "DELETED", rt.group, rt.plural, final, obj))
        self._collect(rt, final, propagation)
        return final

    def _collect(self, rt: ResourceType, gone: dict[str, Any], propagation: str) -> None:
        """Delete (or orphan) what depended on an object that is now gone."""
        uid = gone["metadata"]["uid"]
        types = {(t.group, t.plural): t for t in self.registry.all()}
        doomed = gc.dependents(uid, self._live())
        if is_crd(rt):
            lost = {(t.group, t.plural): t for t in self.registry.unregister_crd(gone["metadata"]["name"])}
            types.update(lost)
            doomed += [key for key, _ in self._live() if (key[0].group, key[0].plural) in lost]
        if (rt.group, rt.plural) == ("", "namespaces"):
            doomed += gc.in_namespace(gone["metadata"]["name"], self._live())
        for res, namespace, name in dict.fromkeys(doomed):
            owned = types.get((res.group, res.plural))
            dependent = self._stored(owned, namespace, name) if owned else None
            if owned is None or dependent is None:
                continue  # gone meanwhile (a dependent of another dependent), or of an unknown type
            if propagation == "Orphan" and not is_crd(rt):
                self._write(owned, dependent, gc.orphaned(dependent, uid), None)
            else:
                self.delete(owned, namespace, name, {})

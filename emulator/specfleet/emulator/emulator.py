"""The KMock KubernetesEmulator subclass: HTTP requests in, Kubernetes API semantics out.

KMock gives the HTTP plumbing, the request log, the object store (`objects`, with histories) and
its DSL: reactions a test adds (`emulator['get /api/v1/pods'] << 500`) still win over the emulator,
which serves everything else as the single fallback reaction.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering

from specfleet.emulator import apply, bodies, discovery, dryrun, errors, openapi, schema, tables
from specfleet.emulator.patching import APPLY_PATCH
from specfleet.emulator.paths import ApiPath, parse_path, verb_of
from specfleet.emulator.recording import Recorder, record_of
from specfleet.emulator.resources import ResourceType
from specfleet.emulator.selectors import Matcher, SelectorError, field_matcher, label_matcher
from specfleet.emulator.store import Store
from specfleet.emulator.watching import WatchQuery, stream

_ACTIONS = {
    "list": "LIST",
    "watch": "WATCH",
    "get": "FETCH",
    "create": "CREATE",
    "patch": "UPDATE",
    "update": "UPDATE",
    "delete": "DELETE",
}


@attrs.define(kw_only=True)
class KubeEmulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    history_limit: int = 10000  # changes kept for watch resumption; older versions get 410 Gone
    bookmark_interval: float = 60.0
    recorder: Recorder = attrs.field(factory=Recorder)
    store: Store = attrs.field(init=False)
    _own: Any = attrs.field(init=False, default=None)  # the fallback reaction that serves through `_serve`

    def __attrs_post_init__(self) -> None:
        # Not super(): kmock's own fallbacks (discovery, naive CRUD) are replaced by `_serve`.
        self.store = Store(self._objects, self.history_limit)
        self._own = self.fallback << self._serve

    def drop_reactions(self) -> None:
        """Forget the reactions tests added (`emulator['get /api/v1/pods'] << 500`); the emulator serves alone."""
        self._payloads[:] = [self._own]

    # --- kmock plumbing ------------------------------------------------------------------------

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """Parse with our own path parser (kmock's crashes on /api/v1/namespaces), record, serve."""
        body = await raw_request.read()
        api = parse_path(raw_request.path)
        query = dict(raw_request.query)
        content_type = raw_request.headers.get("Content-Type", "")
        data = bodies.decode(body, content_type)
        record = record_of(raw_request.method, raw_request.path, query, content_type, data, api)
        self.recorder.add(record)
        request = rendering.Request(
            id=len(self._requests),
            raw_request=raw_request,
            url=raw_request.url,
            method=raw_request.method,
            params=query,
            headers=dict(raw_request.headers),
            cookies=dict(raw_request.cookies),
            body=body,
            text=body.decode(errors="replace"),
            data=data,
            action=kmock.action(_ACTIONS[record.verb]) if record.verb in _ACTIONS else None,
            resource=kmock.resource(group=api.group, version=api.version, plural=api.plural)
            if api.is_resource
            else None,
            namespace=api.namespace,
            name=api.name,
            subresource=api.subresource,
        )
        self._requests.append(request)
        try:
            return await self._handle(request)
        except rendering.StreamingError as exc:  # headers already sent: end the stream with an ERROR event
            response: aiohttp.web.StreamResponse = exc.args[0]
            with contextlib.suppress(ConnectionError):
                await self._stream_error(exc.__cause__ or exc, response)
                await response.write_eof()
            return response
        except Exception as exc:
            if self._errors and not isinstance(exc, errors.ApiError):
                self._errors[-1].append(exc)
            return await self._render_error(exc)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        # Skip KubernetesEmulator._handle: its naive state changes are what `_serve` replaces.
        # kmock decides whether a reaction sees a request by filtering the whole request history, which costs
        # O(requests so far) per request: quadratic over a long session or demo. The emulator's own fallback sees
        # every request, so while it is the only reaction it answers directly; a test's reaction brings kmock's
        # matching back until `drop_reactions` (a used-up reaction still costs the scan: kmock never removes it).
        if len(self._payloads) == 1 and self._payloads[0] is self._own:
            direct: aiohttp.web.StreamResponse = await self._payloads[0].response(request)
            return direct
        response: aiohttp.web.StreamResponse = await kmock.RawHandler._handle(self, request)
        return response

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        error = exc if isinstance(exc, errors.ApiError) else errors.ApiError(500, "InternalError", repr(exc))
        return aiohttp.web.json_response(error.status(), status=error.code)

    async def _stream_error(self, exc: Exception, raw_response: aiohttp.web.StreamResponse) -> None:
        error = exc if isinstance(exc, errors.ApiError) else errors.ApiError(500, "InternalError", repr(exc))
        await raw_response.write(json.dumps({"type": "ERROR", "object": error.status()}).encode() + b"\n")

    # --- serving -------------------------------------------------------------------------------

    async def _serve(self, request: rendering.Request) -> rendering.Response:
        """The answer to any request no test reaction took.

        Always a Response with an explicit status: kmock copies a returned Response's status onto the
        fallback reaction itself, so a bare payload would inherit the status of the previous answer.
        """
        status, payload = self._answer(request)
        return rendering.Response(status=status, headers={"Content-Type": "application/json"}, payload=payload)

    def _answer(self, request: rendering.Request) -> tuple[int, Any]:
        path = request.url.path
        api = parse_path(path)
        if not api.is_resource:
            served = self.store.registry.all()
            document = discovery.document(served, path) or openapi.document(served, path)
            if document is None or request.method != "GET":
                raise errors.unknown_resource(path)
            return 200, document
        rt = self.store.registry.find(api.group or "", api.version or "", api.plural or "")
        if rt is None or (api.namespace and not rt.namespaced) or api.subresource not in (None, *rt.subresources):
            raise errors.unknown_resource(path)
        query = dict(request.params)
        verb = verb_of(request.method, api, query)
        if request.data is None:  # an encoding the emulator does not read is answered 415, as the API server does
            bodies.read(request.body, request.headers.get("Content-Type", ""))
        if verb == "watch":
            return 200, self._watch(rt, api, query)
        applies = request.headers.get("Content-Type", "").startswith(APPLY_PATCH)
        creates = verb == "create" or (applies and not self.store.exists(rt, api.namespace, api.name or ""))
        deletes = verb in ("delete", "deletecollection") and isinstance(request.data, dict)
        dry = dryrun.requested(verb, query, request.data if deletes else {})
        writer = apply.writer_of(verb, query, request.headers, api.subresource)
        with self.store.dry_run(dry), self.store.written_by(writer):
            result = self._dispatch(verb, rt, api, request)
        if verb in ("get", "list") and tables.wants_table(request.headers.get("Accept", "")) and not api.subresource:
            items = result.get("items", [result])
            return 200, tables.table(rt, items, self.store.resource_version)
        return (201 if creates else 200), result

    def _dispatch(self, verb: str, rt: ResourceType, api: ApiPath, request: rendering.Request) -> dict[str, Any]:
        store, namespace, name, sub = self.store, api.namespace, api.name or "", api.subresource
        query = dict(request.params)
        options = request.data if isinstance(request.data, dict) else {}
        options = {
            **options,
            **({"propagationPolicy": query["propagationPolicy"]} if "propagationPolicy" in query else {}),
        }
        if verb in {"create", "update", "patch"} and sub != "scale" and query.get("fieldValidation") == "Strict":
            _reject_unknown_fields(rt, request.data, request.headers.get("Content-Type", ""))
        match verb:
            case "get":
                return store.scale(rt, namespace, name) if sub == "scale" else store.get(rt, namespace, name)
            case "list":
                items = store.select(rt, namespace, _selects(query))
                return {
                    "kind": f"{rt.kind}List",
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": store.resource_version},
                    "items": items,
                }
            case "create":
                return store.create(rt, namespace, request.data)
            case "update":
                return store.update(rt, namespace, name, request.data, sub)
            case "patch" if request.headers.get("Content-Type", "").startswith(APPLY_PATCH):
                return apply.serve_apply(store, rt, namespace, name, request.data, query, sub)
            case "patch":
                content_type = request.headers.get("Content-Type", "")
                return store.patch(rt, namespace, name, content_type, request.data, sub)
            case "delete":
                return store.delete(rt, namespace, name, options)
            case "deletecollection":
                items = store.delete_collection(rt, namespace, _selects(query), options)
                return {
                    "kind": f"{rt.kind}List",
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": store.resource_version},
                    "items": items,
                }
        raise errors.method_not_allowed(request.method, rt.qualified)

    def _watch(self, rt: ResourceType, api: ApiPath, query: dict[str, str]) -> AsyncIterator[Any]:
        if api.name:  # a watch of one object is a watch of the collection narrowed to its name
            query["fieldSelector"] = ",".join(filter(None, [query.get("fieldSelector"), f"metadata.name={api.name}"]))
        selects = _selects(query)
        version = query.get("resourceVersion", "")
        initial = version in ("", "0") or query.get("sendInitialEvents") == "true"
        try:
            since = int(self.store.resource_version if initial else version)
        except ValueError as exc:
            raise errors.bad_request(f"invalid resource version: {version!r}") from exc
        watch = WatchQuery(
            group=rt.group,
            plural=rt.plural,
            namespace=api.namespace,
            selects=selects,
            since=since,
            initial=tuple(self.store.select(rt, api.namespace, selects)) if initial else (),
            timeout=float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None,
            bookmarks=query.get("allowWatchBookmarks") == "true",
            initial_events_end=query.get("sendInitialEvents") == "true" and query.get("allowWatchBookmarks") == "true",
        )
        if since < self.store.log.compacted_rv:
            return _expired(since, self.store.log.compacted_rv)
        return stream(self.store.log, watch, lambda: self._bookmark(rt), self.bookmark_interval)

    def _bookmark(self, rt: ResourceType) -> dict[str, Any]:
        marker = {
            "kind": rt.kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": self.store.resource_version},
        }
        return {"type": "BOOKMARK", "object": marker}


def _reject_unknown_fields(rt: ResourceType, body: Any, content_type: str) -> None:
    """`fieldValidation=Strict` (what kubectl sends when the OpenAPI document offers it): a field the schema
    does not declare is an error, not silently pruned. A JSON patch is a list of operations: not checked."""
    if rt.schema is None or not isinstance(body, dict) or content_type.startswith("application/json-patch"):
        return
    unknown = schema.unknown_fields(body, rt.schema)
    if unknown:
        fields = ", ".join(f'unknown field "{path}"' for path in unknown)
        message = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding error: '
        raise errors.bad_request(message + fields)


def _selects(query: dict[str, str]) -> Matcher:
    try:
        labels, fields = label_matcher(query.get("labelSelector")), field_matcher(query.get("fieldSelector"))
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from exc
    return lambda obj: labels(obj) and fields(obj)


async def _expired(since: int, oldest: int) -> AsyncIterator[Any]:
    yield b""
    error = errors.gone(f"too old resource version: {since} ({oldest})")
    yield {"type": "ERROR", "object": error.status()}

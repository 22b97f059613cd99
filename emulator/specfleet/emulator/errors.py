"""API errors rendered as `kind: Status` bodies, worded as kube-apiserver words them."""

from __future__ import annotations

from typing import Any

from specfleet.emulator.resources import ResourceType


class ApiError(Exception):
    """An error answer of the API: HTTP code, machine reason, human message, details."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    message = f'{rt.qualified} "{name}" not found'
    return ApiError(404, "NotFound", message, _details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    message = f'{rt.qualified} "{name}" already exists'
    return ApiError(409, "AlreadyExists", message, _details(rt, name))


def conflict(rt: ResourceType, name: str) -> ApiError:
    message = (
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    return ApiError(409, "Conflict", message, _details(rt, name))


def invalid(rt: ResourceType, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid; each cause has `field`, `reason` and `message` ("Invalid value: ...")."""
    texts = [f"{cause['field']}: {cause['message']}" if cause["field"] else cause["message"] for cause in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    kind_group = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    message = f'{kind_group} "{name}" is invalid: {summary}'
    details = {"name": name, "kind": rt.kind, "causes": causes}
    if rt.group:
        details["group"] = rt.group
    return ApiError(422, "Invalid", message, details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unknown_resource(path: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": f"404 page not found: {path}"}]},
    )


def method_not_allowed(method: str, what: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource: {method} {what}",
    )

"""Request bodies by media type: JSON, YAML (server-side apply), Kubernetes protobuf; CBOR is refused.

A body the emulator cannot read is answered as the API server answers an encoding it does not serve:
415 Unsupported Media Type. For CBOR that is also what makes client-go fall back to JSON for good.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import yaml

from specfleet.emulator import errors, protobuf

_CBOR = ("application/cbor", "application/apply-patch+cbor")
_SERVED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


def media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def read(body: bytes, content_type: str) -> Any:
    """A request body as plain data (None when empty or neither JSON nor YAML); raises ApiError for an
    encoding the emulator does not read."""
    if not body:
        return None
    media = media_type(content_type)
    if media == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)
        except protobuf.UnsupportedKindError as exc:
            raise unsupported(f"{exc}; send it as application/json") from exc
        except protobuf.ProtobufError as exc:
            raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc
    if media in _CBOR:
        raise unsupported(f"the body of the request was in an unknown format - accepted media types include: {_SERVED}")
    try:
        return json.loads(body)
    except ValueError:
        with contextlib.suppress(yaml.YAMLError):
            return yaml.safe_load(body)
    return None


def decode(body: bytes, content_type: str) -> Any:
    """`read`, with None for a body it refuses (for the request log; the refusal is answered by `read`)."""
    try:
        return read(body, content_type)
    except errors.ApiError:
        return None


def unsupported(message: str) -> errors.ApiError:
    return errors.ApiError(415, "UnsupportedMediaType", message)

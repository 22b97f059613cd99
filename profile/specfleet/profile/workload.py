"""PURE. The user's requests: an OpenAI-format JSONL file of chat or completion request bodies.

Each line is either a request body (`messages` → `/v1/chat/completions`, `prompt` → `/v1/completions`) or an
OpenAI batch-API line `{"custom_id", "method", "url", "body"}`. Sampling parameters are kept as they are; the
replay only forces streaming (for TTFT and per-token timing) and the engine's served model name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
_PATHS = {"messages": CHAT_PATH, "prompt": COMPLETIONS_PATH}


class WorkloadError(ValueError):
    """A request file that cannot be replayed; the message names the line."""


@dataclass(frozen=True)
class ReplayRequest:
    """One request of the file, as the engine will get it (minus the forced fields)."""

    line: int
    path: str
    body: Mapping[str, Any]

    def streamed(self, model: str, max_tokens: int | None) -> dict[str, Any]:
        """The body to send: streamed with a final usage chunk, for `model`, its output capped at `max_tokens`."""
        body = {**self.body, "model": model, "stream": True, "stream_options": {"include_usage": True}}
        if max_tokens is not None:
            key = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
            body[key] = min(int(body.get(key) or max_tokens), max_tokens)
        return body


def parse_requests(lines: Iterable[str], source: str = "requests") -> tuple[ReplayRequest, ...]:
    """Every non-blank line as a request; the first bad line raises `WorkloadError` naming `source:line`."""
    requests = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            requests.append(_parse_line(text, f"{source}:{number}", number))
    if not requests:
        raise WorkloadError(f"{source}: no requests (the file is empty)")
    return tuple(requests)


def _parse_line(text: str, where: str, number: int) -> ReplayRequest:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
    if isinstance(obj, dict) and isinstance(obj.get("body"), dict):  # the batch-API form
        return _request(obj["body"], where, number, url=obj.get("url"))
    if not isinstance(obj, dict):
        raise WorkloadError(f"{where}: must be a JSON object (a chat or completion request body)")
    return _request(obj, where, number, url=None)


def _request(body: dict[str, Any], where: str, number: int, url: object) -> ReplayRequest:
    kinds = [key for key in _PATHS if key in body]
    if len(kinds) != 1:
        raise WorkloadError(f"{where}: needs exactly one of `messages` (chat) or `prompt` (completion)")
    path = _PATHS[kinds[0]]
    if url is not None and url != path:
        raise WorkloadError(f"{where}: url {url!r} does not match the body (expected {path!r})")
    if kinds[0] == "messages" and not (isinstance(body["messages"], list) and body["messages"]):
        raise WorkloadError(f"{where}: `messages` must be a non-empty list")
    if kinds[0] == "prompt" and not isinstance(body["prompt"], str | list):
        raise WorkloadError(f"{where}: `prompt` must be a string or a list")
    if body.get("n", 1) != 1:
        raise WorkloadError(f"{where}: n={body['n']!r} is not supported; each request must ask for one answer")
    return ReplayRequest(line=number, path=path, body=body)

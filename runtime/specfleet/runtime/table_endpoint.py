"""The live-table control endpoint on the runtime's health/control port (never on the serving port).

I/O shell, served by the launcher next to the probes:

- `GET /speculation/table` (no token: read only) → 200 `{"version", "table", "appliedVersion", "startupK",
  "method", "allowedK", "live"}`: the newest accepted table, the version the scheduler runs (null until the
  engine core is up), and which k values a live table may use;
- `PUT /speculation/table` with `Authorization: Bearer <token>` and `{"table": [[first, last, k], ...],
  "expectedVersion": int?}` → 200 `{"version", "table"}` once the scheduler runs it; 400/401/403/409 with
  `{"message"}` (see `table_control`); 409 as well when the engine has no batch-size table to replace; 202
  `{"version", "table", "applied": false}` when the engine core did not answer within ANSWER_SECONDS (it
  applies the table when it gets to it; `appliedVersion` tells).

The token is the file named by SPECFLEET_CONTROL_TOKEN_FILE (default: the operator's Secret mount), read
again whenever it changes, so a rotated Secret takes effect without a restart.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from specfleet.runtime.engine_args import EngineConfig
from specfleet.runtime.table_channel import (
    APPLIED_FILE,
    ENV_TABLE_DIR,
    REQUEST_FILE,
    ChangedFile,
    EngineAnswer,
    read_text,
    table_request,
    write_json_atomically,
)
from specfleet.runtime.table_control import (
    CONTROL_TABLE_PATH,
    DEFAULT_TOKEN_PATH,
    TOKEN_FILE_ENV,
    TableRequestError,
    authorize,
    parse_table_request,
    startup_table,
)

ANSWER_SECONDS = 10.0
ANSWER_POLL_SECONDS = 0.05
NOT_LIVE = "speculation is not configured; enabling it needs a restart"
NO_TABLE = "the engine started without a batch-size table; adding one needs a restart"


class TableEndpoint:
    def __init__(self, engine: EngineConfig, folder: Path, env: Mapping[str, str]) -> None:
        spec = engine.speculative
        self.method = spec.method if spec else "off"
        self.startup_k = spec.k if spec else 0
        self.current = startup_table(spec)
        self.folder = folder
        self.answers = ChangedFile(folder / APPLIED_FILE, EngineAnswer.load)
        self.token = ChangedFile(Path(env.get(TOKEN_FILE_ENV) or DEFAULT_TOKEN_PATH), read_text)
        self.lock = asyncio.Lock()

    def child_env(self) -> dict[str, str]:
        """What the serving process (and vLLM's engine core below it) needs to find the channel."""
        return {ENV_TABLE_DIR: str(self.folder)}

    def register(self, app: web.Application) -> None:
        app.router.add_get(CONTROL_TABLE_PATH, self.get)
        app.router.add_put(CONTROL_TABLE_PATH, self.put)

    async def get(self, _: web.Request) -> web.Response:
        answer = self.answers.read()
        table = self.current.to_json() if self.current else {"version": 0, "table": []}
        return web.json_response(
            {
                **table,
                "appliedVersion": answer.applied.version if answer else None,
                "startupK": self.startup_k,
                "method": self.method,
                "allowedK": self._allowed_k(answer),
                "live": self.current is not None,
            }
        )

    async def put(self, request: web.Request) -> web.Response:
        try:
            token = self.token.read()
            authorize(request.headers.get("Authorization"), token.strip() if token else None)
            body = await _json_body(request)
            async with self.lock:
                return await self._replace(body)
        except TableRequestError as exc:
            return web.json_response({"message": exc.message}, status=exc.status)

    async def _replace(self, body: Any) -> web.Response:
        if self.current is None:
            raise TableRequestError(409, NOT_LIVE if self.method == "off" else NO_TABLE)
        allowed = self._allowed_k(self.answers.read())
        table = parse_table_request(body, self.startup_k, self.current, allowed_k=allowed)
        request_id = uuid.uuid4().hex
        write_json_atomically(self.folder / REQUEST_FILE, table_request(table, request_id))
        answer = await self._answer_to(request_id)
        if answer is not None and answer.refused is not None:
            raise TableRequestError(400, f"table: the engine refused it: {answer.refused}")
        # Accepted: applied now, or (no answer yet) waiting in the request file for the engine core.
        self.current = table
        if answer is None:
            return web.json_response({**table.to_json(), "applied": False}, status=202)
        return web.json_response(table.to_json())

    async def _answer_to(self, request_id: str) -> EngineAnswer | None:
        deadline = asyncio.get_running_loop().time() + ANSWER_SECONDS
        while asyncio.get_running_loop().time() < deadline:
            answer = self.answers.read()
            if answer is not None and answer.request == request_id:
                return answer
            await asyncio.sleep(ANSWER_POLL_SECONDS)
        return None

    def _allowed_k(self, answer: EngineAnswer | None) -> list[int]:
        """The engine core's own list once it answered (it knows max_num_seqs), else the start-up table's."""
        if answer is not None:
            return list(answer.allowed_k)
        return sorted(self.current.ks()) if self.current else []


async def _json_body(request: web.Request) -> Any:
    try:
        return json.loads(await request.text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TableRequestError(400, f"body: not valid JSON ({exc})") from exc

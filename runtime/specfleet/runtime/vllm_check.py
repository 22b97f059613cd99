"""Defence in depth: vLLM's own parser confirms that the extra arguments change no managed setting.

The API already refuses every extra argument that could reach a managed flag (runtime/specfleet/runtime/extra_args.py).
This re-check, run by the launcher before it starts the engine, covers what that rule cannot see: a vLLM whose
parser resolves arguments differently from the one the rule was written against, the node's own arguments
(SPECFLEET_ENGINE_EXTRA_ARGS), and resources admitted before the rule existed. It parses the managed arguments
alone, then everything vLLM will be given, and refuses if any managed destination differs. I/O shell: it
imports vLLM in a process of its own (a few seconds, paid once per pod start).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace

from specfleet.runtime.engine_args import EngineConfigError
from specfleet.runtime.engine_flags import MANAGED_ENGINE_FLAGS
from specfleet.runtime.settings import RuntimePlan, served_args

# vLLM's destination of each managed flag, and of the positional model (`model_tag`) a bare argument sets.
POSITIONAL_MODEL = "model_tag"
MANAGED_DESTINATIONS = (*(flag.removeprefix("--").replace("-", "_") for flag in MANAGED_ENGINE_FLAGS), POSITIONAL_MODEL)
# vLLM's imports take seconds, more on a busy node; the engine would take longer still to start.
CHECK_TIMEOUT_SECONDS = 300
# The check process's verdict line on stdout (vLLM may log there too).
ANSWER = "specfleet-vllm-check: "
EXIT_REFUSED = 2


def vllm_parser() -> argparse.ArgumentParser:
    """The parser of vLLM's OpenAI-compatible server, exactly as its entrypoint builds it (vLLM 0.32)."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser: argparse.ArgumentParser = make_arg_parser(FlexibleArgumentParser())
    return parser


def _parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return parser.parse_args(list(args))
    except SystemExit as exc:  # argparse reports a refusal by exiting; keep its last line
        lines = errors.getvalue().strip().splitlines() or [f"exit {exc.code}"]
        raise EngineConfigError(f"vLLM's parser refuses the arguments: {lines[-1]}") from exc
    except Exception as exc:  # e.g. an unreadable --config file; vLLM would not start either
        raise EngineConfigError(f"vLLM's parser refuses the arguments: {exc}") from exc


def _setting(destination: str) -> str:
    if destination == POSITIONAL_MODEL:
        return "the positional model (a bare argument)"
    return "--" + destination.replace("_", "-")


def managed_override(parser: argparse.ArgumentParser, managed: Sequence[str], full: Sequence[str]) -> str | None:
    """One line naming the first managed setting `full` resolves differently from `managed` alone, or None."""
    alone, together = _parse(parser, managed), _parse(parser, full)
    for destination in MANAGED_DESTINATIONS:
        before, after = getattr(alone, destination, None), getattr(together, destination, None)
        if before != after:
            return (
                f"extra arguments would change {_setting(destination)} from {before!r} to {after!r}, "
                "which the operator manages; refusing to start the engine"
            )
    return None


def argument_lists(runtime: RuntimePlan) -> tuple[list[str], list[str]]:
    """What vLLM's parser gets with the managed arguments alone, and what it gets in the serving process."""
    managed_only = replace(
        runtime,
        engine=replace(runtime.engine, extra_args=()),
        settings=replace(runtime.settings, extra_engine_args=()),
    )
    return served_args(managed_only.serve_args()), served_args(runtime.serve_args())


def recheck(runtime: RuntimePlan) -> None:
    """Raise EngineConfigError if vLLM would run with a managed setting other than the operator's.

    The parse runs in a short-lived process, so the launcher, which lives as long as the pod and counts
    against the container's memory limit, never holds vLLM's imports (about 650 MiB).
    """
    managed, full = argument_lists(runtime)
    result = subprocess.run(
        [sys.executable, "-m", __name__],
        input=json.dumps({"managed": managed, "full": full}),
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_SECONDS,
        check=False,
    )
    answers = [line.removeprefix(ANSWER) for line in result.stdout.splitlines() if line.startswith(ANSWER)]
    if result.returncode == 0 and not answers:
        return
    if answers:
        raise EngineConfigError(answers[-1])
    last = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
    raise EngineConfigError(f"vLLM's argument parser could not be run: {last}")


def main() -> int:
    """The check's own process: the two argument lists as JSON on stdin, a refusal as an ANSWER line."""
    request = json.load(sys.stdin)
    try:
        problem = managed_override(vllm_parser(), request["managed"], request["full"])
    except EngineConfigError as exc:
        problem = str(exc)
    if problem is None:
        return 0
    print(ANSWER + problem, flush=True)
    return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())

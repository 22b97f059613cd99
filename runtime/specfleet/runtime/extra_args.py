"""Which extra engine arguments a fleet may add: none that reaches a setting the operator manages. Pure.

vLLM's argument parser is lenient in ways that turn a harmless-looking argument into a managed one: it takes
any unambiguous prefix of a long flag (`--por` is `--port`), `_` for `-` in names, dotted keys into a JSON
flag (`--speculative-config.num_speculative_tokens=9`), a value as the next item (`--port`, `9999`), short
aliases (`-tp`), and anything that does not start with `-` (also `—model=x`, with an em dash) as the
positional model. Rather than list spellings, the rule fixes the form of every extra argument:

1. it is `--name` or `--name=value`, the name of ASCII `[a-z0-9._-]` starting with a letter or digit, so
   nothing is positional, no value stands alone and no look-alike dash or short alias gets through;
2. its name up to the first `.`, with `_` read as `-`, is not a prefix of (or equal to) a managed flag.

Both are regexes that the CRD's CEL rules (on each item) and the Python check share, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from specfleet.runtime.engine_flags import MANAGED_ENGINE_FLAGS, MANAGED_SHORT_ALIASES

# RE2 (CEL) and Python agree on this dialect; `(?s:.*)` lets a value hold newlines. Python matches with
# fullmatch, because its `$` also matches before a trailing newline and RE2's does not.
EXTRA_ARG_SYNTAX = r"^--[a-z0-9][a-z0-9._-]*(=(?s:.*))?$"
EXTRA_ARG_SYNTAX_MESSAGE = (
    "each extra argument must be --name or --name=value with a name of a-z, 0-9, '.', '_' and '-' "
    "(write values after '=', e.g. --max-num-seqs=64): vLLM takes any other argument as the model to serve, "
    "or a short alias of a flag"
)
MANAGED_FLAGS_MESSAGE = (
    "extraArgs may not reach a flag the operator manages, by its name, a prefix of it, a dotted key or '_' for '-': "
    + ", ".join(MANAGED_ENGINE_FLAGS)
)
_SHOWN_CHARS = 80
Trie = dict[str, "Trie"]


def _trie(names: Sequence[str]) -> Trie:
    root: Trie = {}
    for name in names:
        node = root
        for char in name:
            node = node.setdefault(char, {})
    return root


def _alternatives(node: Trie) -> str:
    """Every non-empty path from this trie node, each child optional past its first character."""
    parts = []
    for char, child in sorted(node.items()):
        atom = "[-_]" if char == "-" else char
        parts.append(atom + (f"({_alternatives(child)})?" if child else ""))
    return parts[0] if len(parts) == 1 else "(" + "|".join(parts) + ")"


_MANAGED_NAMES = [flag.removeprefix("--") for flag in MANAGED_ENGINE_FLAGS]
# An argument already in the EXTRA_ARG_SYNTAX form whose name vLLM could resolve to a managed flag.
MANAGED_FLAG_REACH = r"^--" + _alternatives(_trie(_MANAGED_NAMES)) + r"([.=](?s:.*))?$"
_SYNTAX_RE = re.compile(EXTRA_ARG_SYNTAX)
_REACH_RE = re.compile(MANAGED_FLAG_REACH)


def managed_flags_reached(arg: str) -> tuple[str, ...]:
    """The managed flags vLLM's parser could map this `--name[=value]` argument onto (prefixes, `_`, dots)."""
    if not _REACH_RE.fullmatch(arg):
        return ()
    name = arg.removeprefix("--").split("=", 1)[0].split(".", 1)[0].replace("_", "-")
    return tuple(flag for flag in MANAGED_ENGINE_FLAGS if flag.removeprefix("--").startswith(name))


def extra_arg_problem(arg: str) -> str | None:
    """Why an extra engine argument is refused, naming the managed setting it would reach; None if it may pass."""
    shown = repr(arg if len(arg) <= _SHOWN_CHARS else arg[: _SHOWN_CHARS - 3] + "...")
    if not _SYNTAX_RE.fullmatch(arg):
        alias = MANAGED_SHORT_ALIASES.get(re.split(r"[=\s]", arg, maxsplit=1)[0])
        if alias:
            return f"{shown} would set {alias} (vLLM's short alias), which the operator manages"
        if not arg.startswith("-"):
            return (
                f"{shown} is not --name or --name=value: vLLM would take it as the model to serve (--model), "
                "which the operator manages; write a flag's value after '=', e.g. --max-num-seqs=64"
            )
        return f"{shown} is not --name or --name=value with a name of a-z, 0-9, '.', '_' and '-'"
    reached = managed_flags_reached(arg)
    if reached:
        return f"{shown} would set {' or '.join(reached)}, which the operator manages"
    return None

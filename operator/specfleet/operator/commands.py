"""The `specfleet` subcommands other distributions add: the simulator, the emulator, the demo and the profiler.

They are not part of the operator (its image does not carry them), so they register under the entry-point group
`specfleet.commands` and the CLI lists whichever are installed. The help lines of the known ones live here, so
that `specfleet --help` imports none of them.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points

GROUP = "specfleet.commands"

_HELP = {
    "emulator": "Serve the Kubernetes API emulator",
    "simulate": "Replay a load trace through the fleet simulator",
    "demo": "A local fleet where the real operator switches speculation",
    "profile": "Measure speculation on your own requests and find the crossovers",
}


@dataclass(frozen=True)
class WorkshopCommand:
    name: str
    target: str  # "module:function", the function taking the command's argv and returning an exit code

    @property
    def help(self) -> str:
        return f"{_HELP.get(self.name, 'An installed plug-in command.')} (see `specfleet {self.name} --help`)."

    def run(self, argv: Sequence[str]) -> int:
        module_name, _, function = self.target.partition(":")
        main: Callable[[list[str]], int] = getattr(importlib.import_module(module_name), function)
        return int(main(list(argv)))


@functools.cache
def workshop_commands() -> dict[str, WorkshopCommand]:
    return {ep.name: WorkshopCommand(ep.name, ep.value) for ep in sorted(entry_points(group=GROUP), key=_name)}


def _name(ep: object) -> str:
    return str(getattr(ep, "name", ""))

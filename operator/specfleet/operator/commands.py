"""The `specfleet` subcommands other distributions add: the simulator, the emulator, the demo and the profiler.

They are not part of the operator (its image does not carry them), so they register under the entry-point group
`specfleet.commands` and the CLI lists whichever are installed. The help lines of the known ones live here, so
that `specfleet --help` imports none of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

GROUP = "specfleet.commands"

_HELP = {
    "emulator": "Serve the Kubernetes API emulator",
    "simulate": "Replay a load trace through the fleet simulator",
    "demo": "A local fleet where the real operator switches speculation",
    "profile": "Measure speculation on your own requests and find the crossovers",
}


@dataclass(frozen=True)
class WorkshopCommand:
    entry: EntryPoint  # names a function that takes the command's argv and returns its exit code

    @property
    def help(self) -> str:
        name = self.entry.name
        return f"{_HELP.get(name, 'An installed plug-in command.')} (see `specfleet {name} --help`)."

    def run(self, argv: Sequence[str]) -> int:
        main: Callable[[list[str]], int] = self.entry.load()
        return int(main(list(argv)))


@functools.cache
def workshop_commands() -> dict[str, WorkshopCommand]:
    return {ep.name: WorkshopCommand(ep) for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name)}

"""Every `specfleet` command and option says what it is: each parser has a description, each option a help text.

The parsers are the real ones, reached as a user reaches them: `specfleet <command> [sub] --help`, the command
list read from the top-level parser (so a newly installed workshop command is walked too).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from specfleet.operator.cli import _parser, main

# Subcommands a workshop command dispatches itself, not through argparse subparsers.
NESTED = {"simulate": ["speedup"]}


def _commands() -> list[str]:
    (subparsers,) = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return list(subparsers.choices)


def _help_parser(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser that answers `specfleet <argv> --help`."""
    answered: list[argparse.ArgumentParser] = []
    monkeypatch.setattr(argparse.ArgumentParser, "print_help", lambda self, file=None: answered.append(self))
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return answered[-1]


def _undescribed(parser: argparse.ArgumentParser) -> Iterator[str]:
    if not (parser.description or "").strip():
        yield f"{parser.prog}: no description"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if not (choice.help or "").strip():
                    yield f"{parser.prog} {choice.dest}: no help"
        elif not (action.help or "").strip():
            yield f"{parser.prog} {'/'.join(action.option_strings) or action.dest}: no help"


def test_the_command_list_names_every_command() -> None:
    assert {"run", "operator", "crds", "emulator", "simulate", "demo", "profile"} <= set(_commands())


def test_every_command_and_option_is_described(monkeypatch: pytest.MonkeyPatch) -> None:
    argvs: list[list[str]] = (
        [[]] + [[name] for name in _commands()] + [[n, sub] for n, subs in NESTED.items() for sub in subs]
    )
    problems = [problem for argv in argvs for problem in _undescribed(_help_parser(argv, monkeypatch))]
    assert problems == []


def test_the_help_is_for_users(capsys: pytest.CaptureFixture[str]) -> None:
    """The simulator's help opened with an internal "SHELL:" tag; no help text carries one."""
    for name in _commands():
        with pytest.raises(SystemExit):
            main([name, "--help"])
        shown = capsys.readouterr().out
        assert shown.startswith("usage: specfleet")
        assert "SHELL" not in shown, name
        assert "PURE" not in shown, name

"""Label and field selectors of list and watch requests."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Matcher = Callable[[dict[str, Any]], bool]

# `key in (a,b)`, `key notin (a,b)`, `key=v`, `key==v`, `key!=v`, `key`, `!key`.
_SET_TERM = re.compile(r"^\s*(\S+?)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*([^!=\s]+)\s*(==|=|!=)\s*(\S*)\s*$")


class SelectorError(ValueError):
    """A selector that does not parse."""


def _split_terms(selector: str) -> list[str]:
    """Split on commas outside parentheses (`a in (x,y),b=c` is two terms)."""
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term.strip() for term in terms if term.strip()]


def _label_term(term: str) -> Callable[[dict[str, str]], bool]:
    if match := _SET_TERM.match(term):
        key, operator, raw_values = match.groups()
        values = {value.strip() for value in raw_values.split(",") if value.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQ_TERM.match(term):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        return lambda labels: term[1:].strip() not in labels
    if re.fullmatch(r"[\w./-]+", term):
        return lambda labels: term in labels
    raise SelectorError(f"unable to parse requirement: {term!r}")


def label_matcher(selector: str | None) -> Matcher:
    """A predicate on objects for a `labelSelector` query value (equality- and set-based)."""
    terms = [_label_term(term) for term in _split_terms(selector or "")]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(term(labels) for term in terms)

    return matches


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def field_matcher(selector: str | None) -> Matcher:
    """A predicate for a `fieldSelector` (`metadata.name=x`, `metadata.namespace!=y`, any dotted path)."""
    terms = []
    for term in _split_terms(selector or ""):
        match = _EQ_TERM.match(term)
        if not match:
            raise SelectorError(f"invalid field selector: {term!r}")
        terms.append(match.groups())

    def matches(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, path) == value) == (op != "!=") for path, op, value in terms)

    return matches

"""Label and field selectors on plain objects."""

from __future__ import annotations

import pytest

from specfleet.emulator.selectors import SelectorError, field_matcher, label_matcher

OBJ = {"metadata": {"name": "n", "namespace": "ns", "labels": {"app": "web", "tier": "front"}}}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app", True),
        ("!app", False),
        ("missing", False),
        ("!missing", True),
        ("app in (web, db)", True),
        ("app notin (web)", False),
        ("app in (db),tier=front", False),
        ("tier=front,app in (db,web)", True),
        ("missing!=x", True),
    ],
)
def test_label_selectors(selector: str, expected: bool) -> None:
    assert label_matcher(selector)(OBJ) is expected


def test_field_selectors() -> None:
    assert field_matcher("metadata.name=n,metadata.namespace=ns")(OBJ)
    assert not field_matcher("metadata.namespace!=ns")(OBJ)
    assert field_matcher(None)(OBJ)


def test_malformed_selectors_raise() -> None:
    with pytest.raises(SelectorError):
        label_matcher("a in b,=")
    with pytest.raises(SelectorError):
        field_matcher("metadata.name")

"""Query building and answer parsing (pure)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specfleet.operator.signals.model import FleetTarget, LabelMapping
from specfleet.operator.signals.promql import (
    MAX_NAMESPACE_FILTER,
    build_queries,
    deployment_matchers,
    duration,
    escape_regex,
    escape_string,
    fleet_matchers,
    parse_results,
)

LABELS = LabelMapping()


def targets(count: int, namespaces: int = 3) -> list[FleetTarget]:
    return [FleetTarget(f"ns{i % namespaces}", f"d{i}", f"h{i}") for i in range(count)]


def test_query_count_does_not_grow_with_the_fleet() -> None:
    small = build_queries(fleet_matchers(targets(10), LABELS), LABELS, 60)
    large = build_queries(fleet_matchers(targets(1000, namespaces=500), LABELS), LABELS, 60)
    assert len(small) == len(large)
    assert [query.name for query in small] == [query.name for query in large]


def test_every_query_matches_both_name_spellings_and_groups_by_the_deployment_labels() -> None:
    for query in build_queries(fleet_matchers(targets(2), LABELS), LABELS, 30):
        assert '__name__=~"vllm[:_]' in query.promql
        assert f"{LABELS.namespace}, {LABELS.deployment}, {LABELS.config_hash}" in query.promql


def test_namespace_filter_is_dropped_for_very_many_namespaces() -> None:
    few = fleet_matchers(targets(10), LABELS)
    many = fleet_matchers(targets(MAX_NAMESPACE_FILTER + 1, namespaces=MAX_NAMESPACE_FILTER + 1), LABELS)
    assert any(matcher.startswith(f"{LABELS.namespace}=~") for matcher in few)
    assert not any(matcher.startswith(f"{LABELS.namespace}=~") for matcher in many)


def test_window_is_rendered_in_milliseconds() -> None:
    assert duration(30) == "30000ms"
    assert duration(2.5) == "2500ms"


def test_escaping_keeps_a_hostile_name_inside_its_string() -> None:
    hostile = FleetTarget('x"} or vector(1) or {a="', 'd\\"', "h\n")
    matchers = deployment_matchers(hostile, LABELS)
    assert matchers[0] == f'{LABELS.namespace}="x\\"}} or vector(1) or {{a=\\""'
    assert matchers[1].endswith('="d\\\\\\""')
    assert matchers[2].endswith('="h\\x0a"')


def test_regex_escaping_makes_metacharacters_literal() -> None:
    assert escape_regex(".*|a(b)") == "\\.\\*\\|a\\(b\\)"
    assert re.fullmatch(escape_regex("a.b+c"), "a.b+c")
    assert not re.fullmatch(escape_regex(".*"), "anything")


@given(st.text())
def test_an_escaped_string_never_closes_early(text: str) -> None:
    body = escape_string(text)
    # Every quote is preceded by an odd run of backslashes, so the string only ends where we end it.
    for match in re.finditer(r'(\\*)"', body):
        assert len(match.group(1)) % 2 == 1
    assert "\n" not in body


def test_label_mapping_refuses_names_that_could_inject() -> None:
    with pytest.raises(ValueError, match="invalid Prometheus label name"):
        LabelMapping(deployment='x"} or vector(1)')
    with pytest.raises(ValueError, match="invalid Prometheus label name"):
        LabelMapping(pod="kubernetes-pod")


def row(value: str, **labels: str) -> dict[str, object]:
    metric = {"namespace": "ns", "specfleet_dev_deployment": "d", "specfleet_dev_config_hash": "h", **labels}
    return {"metric": metric, "value": [1700000000.0, value]}


def test_answers_are_grouped_per_configuration() -> None:
    stats = parse_results(
        {
            "counter:drafts": [
                row("2", pod="p1"),
                row("3", pod="p2"),
                row("1", pod="p3", specfleet_dev_config_hash="old"),
            ],
            "position": [row("1.5", position="0"), row("0.5", position="1"), row("9", position="bogus")],
            "bucket:tpot": [row("1", le="0.1"), row("2", le="+Inf"), row("7", le="not-a-number")],
            "gauge:running_mean": [row("NaN", pod="p1")],
            "pods_now": [row("1", pod="p1")],
        },
        LABELS,
    )
    current = stats[("ns", "d", "h")]
    assert current.counters == {"drafts": {"p1": 2.0, "p2": 3.0}}
    assert current.per_position == {0: 1.5, 1: 0.5}
    assert current.buckets == {"tpot": {0.1: 1.0, float("inf"): 2.0}}
    assert current.pods_now == {"p1"}
    assert stats[("ns", "d", "old")].pods_now == set()  # answered, and no pod of it is live


def test_rows_without_the_grouping_labels_or_a_number_are_skipped() -> None:
    stats = parse_results({"counter:drafts": [{"metric": {"pod": "p"}, "value": [0, "1"]}, row("x", pod="p")]}, LABELS)
    assert stats == {}


def test_an_answer_that_is_not_a_list_of_series_is_refused() -> None:
    with pytest.raises(ValueError, match="expected a list"):
        parse_results({"counter:drafts": {"oops": 1}}, LABELS)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="metric label set"):
        parse_results({"counter:drafts": ["garbage"]}, LABELS)  # type: ignore[list-item]

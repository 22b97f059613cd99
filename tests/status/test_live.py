"""Folding live-table pushes into status: revisions, pods applied, the one Event per revision."""

from __future__ import annotations

from specfleet.operator.api.types import ScheduleEntry, SpeculationState
from specfleet.operator.status.live import PodPush, desired_table, fold_pushes, revision_of

NOW, LATER = "2026-12-01T10:00:00Z", "2026-12-01T10:00:30Z"
TABLE = [[1, 8, 3], [9, 512, 1]]


def test_the_desired_table_is_the_schedule_as_vllm_ranges() -> None:
    state = SpeculationState(
        enabled=True,
        k=3,
        schedule=[ScheduleEntry(max_batch_size=8, k=3), ScheduleEntry(max_batch_size=512, k=1)],
    )
    assert desired_table(state) == TABLE


def test_a_new_table_is_the_next_revision_and_the_same_one_keeps_its_own() -> None:
    first = revision_of(None, TABLE, NOW)
    assert (first.revision, first.table, first.since) == (1, TABLE, NOW)
    assert revision_of(first, TABLE, LATER) is first
    second = revision_of(first, [[1, 512, 2]], LATER)
    assert (second.revision, second.since, second.applied_at) == (2, LATER, None)


def test_every_pod_applied_completes_the_revision_once_with_an_event() -> None:
    revision = revision_of(None, TABLE, NOW)
    done = fold_pushes(revision, [PodPush("a", True), PodPush("b", True)], 2, LATER, ", 12 ms after")
    assert done.completed
    assert (done.live.applied_pods, done.live.ready_pods, done.live.applied_at) == (2, 2, LATER)
    assert [(e.reason, e.message) for e in done.events] == [
        ("TableAppliedLive", "table r1 1-8:3,9-512:1 applied live to 2/2 pods, 12 ms after")
    ]
    again = fold_pushes(done.live, [PodPush("a", True), PodPush("b", True)], 2, "2026-12-01T10:01:00Z")
    assert not again.events
    assert again.live.applied_at == LATER


def test_a_refusing_pod_or_a_missing_replica_holds_the_event_back() -> None:
    revision = revision_of(None, TABLE, NOW)
    partial = fold_pushes(revision, [PodPush("a", True), PodPush("b", False, "403: wrong token")], 2, LATER)
    assert not partial.events
    assert (partial.live.applied_pods, partial.live.ready_pods) == (1, 2)
    assert partial.live.message == "b: 403: wrong token"
    rolling = fold_pushes(revision, [PodPush("a", True)], 2, LATER)  # the second replica is not Ready yet
    assert not rolling.events
    assert rolling.live.applied_at is None

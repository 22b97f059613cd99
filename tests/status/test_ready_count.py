"""Which pods count as Ready on the current configuration while a Deployment rolls (plain Deployment counts)."""

from __future__ import annotations

import pytest

from specfleet.operator.api.types import SpecDecodeDeploymentStatus
from specfleet.operator.status.fleet import ready_on_current


@pytest.mark.parametrize(
    ("replicas", "updated", "ready", "expected"),
    [
        (2, 1, 1, 0),  # surge, 1 replica: the new pod starts while the old one serves
        (1, 1, 1, 1),  # surge done: the old pod is gone
        (5, 1, 4, 0),  # surge, 4 replicas: the new pod is not Ready yet
        (5, 1, 5, 1),  # ... now it is; an old one is about to leave
        (4, 1, 3, 0),  # one at a time (maxSurge 0): 3 old serve, the new one starts
        (4, 2, 3, 1),  # ... the first new pod serves, the second starts
        (4, 4, 4, 4),  # rolled out
        (4, 4, 2, 2),  # no rollout, two pods not Ready
        (0, 0, 0, 0),  # scaled to zero
    ],
)
def test_old_pods_serving_through_a_rollout_are_not_counted_ready_on_the_new_configuration(
    replicas: int, updated: int, ready: int, expected: int
) -> None:
    status = SpecDecodeDeploymentStatus(replicas=replicas, updated_replicas=updated, ready_replicas=ready)
    assert ready_on_current(status) == expected

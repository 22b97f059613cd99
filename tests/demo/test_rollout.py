"""The Deployment controller's arithmetic of the local fleet: maxSurge 1 / maxUnavailable 0 (the default) and
maxSurge 0 / maxUnavailable 1."""

from __future__ import annotations

from specfleet.demo.rollout import PodView, plan


def _pods(*specs: tuple[str, str, bool]) -> list[PodView]:
    return [PodView(name, config, ready, float(i)) for i, (name, config, ready) in enumerate(specs)]


def test_a_new_template_surges_one_pod_and_keeps_the_old_ones_until_it_is_ready() -> None:
    step = plan(2, "new", _pods(("a", "old", True), ("b", "old", True)))
    assert (step.create, step.delete) == (1, ())
    waiting = plan(2, "new", _pods(("a", "old", True), ("b", "old", True), ("c", "new", False)))
    assert (waiting.create, waiting.delete) == (0, ())


def test_an_old_pod_goes_once_its_replacement_is_ready() -> None:
    step = plan(2, "new", _pods(("a", "old", True), ("b", "old", True), ("c", "new", True)))
    assert step.create == 1  # the surge slot the old pod frees
    assert len(step.delete) == 1
    assert step.delete[0] in {"a", "b"}
    last = plan(2, "new", _pods(("b", "old", True), ("c", "new", True)))
    assert (last.create, last.delete) == (1, ())


def test_rolling_to_the_end_never_drops_below_the_desired_ready_count() -> None:
    pods = {"a": ("old", True), "b": ("old", True), "c": ("old", True)}
    serial = 0
    for _ in range(20):
        views = [PodView(n, c, r, float(i)) for i, (n, (c, r)) in enumerate(pods.items())]
        step = plan(3, "new", views)
        for name in step.delete:
            del pods[name]
        assert sum(ready for _, ready in pods.values()) >= 3 or any(not r for _, r in pods.values())
        assert len(pods) + step.create <= 4
        pods = {n: (c, True) for n, (c, _) in pods.items()}  # the pods created last tick are ready now
        for _ in range(step.create):
            serial += 1
            pods[f"n{serial}"] = ("new", False)
    assert sorted(c for c, _ in pods.values()) == ["new"] * 3


def test_scaling_up_and_down() -> None:
    up = plan(3, "h", _pods(("a", "h", True), ("b", "h", True)))
    assert (up.create, up.delete) == (1, ())
    down = plan(1, "h", _pods(("a", "h", True), ("b", "h", False), ("c", "h", True)))
    assert down.create == 0
    assert set(down.delete) == {"b", "c"}


def test_without_a_surge_pod_an_old_pod_goes_first_and_the_ready_count_drops_by_one_at_most() -> None:
    pods = {"a": ("old", True), "b": ("old", True), "c": ("old", True)}
    serial = 0
    for _ in range(20):
        views = [PodView(n, c, r, float(i)) for i, (n, (c, r)) in enumerate(pods.items())]
        step = plan(3, "new", views, max_surge=0, max_unavailable=1)
        for name in step.delete:
            del pods[name]
        assert sum(ready for _, ready in pods.values()) >= 2
        assert len(pods) + step.create <= 3
        pods = {n: (c, True) for n, (c, _) in pods.items()}
        for _ in range(step.create):
            serial += 1
            pods[f"n{serial}"] = ("new", False)
    assert sorted(c for c, _ in pods.values()) == ["new"] * 3

"""Every pod's FIFO as one ring-buffer array: order kept across wrap-around and growth, admission in order."""

from __future__ import annotations

import numpy as np

from specfleet.simulator.queues import PodQueues, segment_positions


def test_segment_positions_count_within_each_segment() -> None:
    assert segment_positions(np.array([2, 0, 3])).tolist() == [0, 1, 0, 1, 2]


def test_each_pod_keeps_its_order_across_wrap_around_and_growth() -> None:
    queues = PodQueues(2, capacity=4)
    queues.push(np.array([0, 1, 0, 0]), np.array([10, 20, 11, 12]))
    assert queues.pop(np.array([2, 0]))[1].tolist() == [10, 11]
    # Pod 0's ring now starts at slot 2: these wrap, and pod 1's five ids need a wider array.
    queues.push(np.array([0, 0, 1, 1, 1, 1]), np.array([13, 14, 21, 22, 23, 24]))
    assert queues.capacity >= 5
    assert queues.length.tolist() == [3, 5]
    pods, ids = queues.pop(np.array([3, 2]))
    assert (pods.tolist(), ids.tolist()) == ([0, 0, 0, 1, 1], [12, 13, 14, 20, 21])
    assert queues.drain(1).tolist() == [22, 23, 24]
    assert queues.length.tolist() == [0, 0]


def test_admission_takes_the_head_in_order_while_it_fits() -> None:
    queues = PodQueues(3)
    cost = np.array([5, 1, 1, 100, 1])  # KV tokens each request needs
    queues.push(np.array([0, 0, 0, 0, 1, 2]), np.array([0, 1, 2, 4, 3, 4]))
    # Pod 0: 5+1+1 fit in 7, the next waits; pod 1's head needs 100; pod 2 may take at most none.
    admitted = queues.admissible(np.array([7.0, 50.0, 10.0]), np.array([4, 1, 0]), cost)
    assert admitted.tolist() == [3, 0, 0]
    assert queues.length.tolist() == [4, 1, 1]  # admissible only counts


def test_admission_reads_past_the_first_block_when_everything_fits() -> None:
    queues = PodQueues(1)
    queues.push(np.zeros(100, np.int64), np.arange(100))
    cost = np.ones(100, np.int64)
    assert queues.admissible(np.array([70.0]), np.array([100]), cost).tolist() == [70]
    assert queues.admissible(np.array([1000.0]), np.array([90]), cost).tolist() == [90]

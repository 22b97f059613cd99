"""PURE every pod's FIFO of waiting requests as one array, so that routing and admission touch all pods at once.

Row p is pod p's queue, a ring buffer: its waiting request ids are `ids[p, (head[p] + i) % capacity]` for
i < `length[p]`. The simulator routes a chunk's arrivals and admits from every queue with a few array
operations, whatever the number of pods (a loop over pods costs more than the decode itself).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def segment_positions(counts: IntArray) -> IntArray:
    """0, 1, ..., c-1 for each count c, concatenated."""
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts, counts)


class PodQueues:
    def __init__(self, pods: int, capacity: int = 64) -> None:
        self.ids = np.zeros((pods, capacity), np.int64)
        self.head = np.zeros(pods, np.int64)
        self.length = np.zeros(pods, np.int64)

    @property
    def capacity(self) -> int:
        return self.ids.shape[1]

    def _reserve(self, needed: int) -> None:
        """Room for `needed` ids in the longest queue: unroll every ring into a wider array."""
        if needed <= self.capacity:
            return
        grown = np.zeros((len(self.head), max(2 * self.capacity, needed)), np.int64)
        width = int(self.length.max(initial=0))
        at = (self.head[:, None] + np.arange(width)) % self.capacity
        grown[:, :width] = np.take_along_axis(self.ids, at, axis=1)
        self.ids, self.head = grown, np.zeros_like(self.head)

    def push(self, pods: IntArray, ids: IntArray) -> None:
        """Append each id to its pod's queue, in the order given."""
        if not len(ids):
            return
        order = np.argsort(pods, kind="stable")
        pods, ids = pods[order], ids[order]
        counts = np.bincount(pods, minlength=len(self.head))
        self._reserve(int((self.length + counts).max()))
        at = self.head[pods] + self.length[pods] + segment_positions(counts[counts > 0])
        self.ids[pods, at % self.capacity] = ids
        self.length += counts

    def peek(self, counts: IntArray, skip: IntArray | None = None) -> tuple[IntArray, IntArray]:
        """(pod, id) of the `counts[p]` ids after the first `skip[p]` of every queue, pod by pod in queue order."""
        pods = np.repeat(np.arange(len(self.head)), counts)
        offset = segment_positions(counts) + (0 if skip is None else np.repeat(skip, counts))
        return pods, self.ids[pods, (self.head[pods] + offset) % self.capacity]

    def pop(self, counts: IntArray) -> tuple[IntArray, IntArray]:
        """Take the first `counts[p]` ids of every queue: (pod, id), pod by pod in queue order."""
        taken = self.peek(counts)
        self.head = (self.head + counts) % self.capacity
        self.length -= counts
        return taken

    def drain(self, pod: int) -> IntArray:
        """Every id waiting at `pod`, in order; its queue is left empty."""
        counts = np.zeros_like(self.length)
        counts[pod] = self.length[pod]
        return self.pop(counts)[1]

    def admissible(self, room: FloatArray, limit: IntArray, cost: IntArray) -> IntArray:
        """Per pod, how many of the queue's first `limit[p]` ids fit in `room[p]`, each needing `cost[id]`
        (vLLM admits in order while free KV blocks remain). The heads are read in growing blocks: a long
        queue behind a full cache is not read to its end."""
        admitted = np.zeros_like(limit)
        room = room.astype(float)
        open_, block = limit > 0, 16
        while open_.any():
            take = np.where(open_, np.minimum(limit - admitted, block), 0)
            pods, ids = self.peek(take, admitted)
            need = cost[ids].astype(float)
            ends = np.cumsum(take)
            total = np.cumsum(need)
            before = np.concatenate(([0.0], total))[ends - take]
            fits = (total - np.repeat(before, take)) <= np.repeat(room, take)
            fitting = np.bincount(pods, weights=fits, minlength=len(limit)).astype(np.int64)
            admitted += fitting
            room -= np.bincount(pods, weights=np.where(fits, need, 0.0), minlength=len(limit))
            open_ &= (fitting == take) & (admitted < limit)
            block *= 2
        return admitted

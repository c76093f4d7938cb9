"""capacity's queue share, checked against Volcano's Test_updateQueueAttrShare.

The share orders queues: the dominant ratio of allocated to deserved over the dimensions the
queue deserves, and 1 for a queue that deserves nothing (best effort, so it goes after every
queue still under its deserved amount); what a queue requests never counts. Amounts are
(CPU cores, memory GiB).
"""

from __future__ import annotations

import pytest

from scheduler.model.resources import Resource
from scheduler.plugins.capacity.attrs import QueueAttr

GI = 2**30


def _res(amount: tuple[float, float] | None) -> Resource:
    return Resource() if amount is None else Resource(amount[0] * 1000, amount[1] * GI)


CASES = [
    pytest.param(None, (1, 1), None, 1.0, id="best-effort queue with allocated resources"),
    pytest.param(None, None, (1, 1), 1.0, id="best-effort queue with pending requests only (no allocated)"),
    pytest.param(None, (1, 1), (0.5, 0.5), 1.0, id="best-effort queue with both allocated and request"),
    pytest.param(None, None, None, 1.0, id="best-effort queue completely idle"),
    pytest.param((2, 2), None, None, 0.0, id="queue with deserved but no allocated"),
    pytest.param((2, 2), (1, 1), None, 0.5, id="queue with deserved, allocated < deserved (CPU dimension)"),
    pytest.param((2, 2), (2, 2), None, 1.0, id="queue with deserved, allocated = deserved"),
    pytest.param((2, 2), (3, 2), None, 1.5, id="queue with deserved, allocated > deserved (CPU dimension)"),
    pytest.param((2, 4), (1, 3), None, 0.75, id="queue with deserved, memory is dominant resource"),
    pytest.param((2, 4), (1.5, 2), None, 0.75, id="queue with deserved, CPU is dominant resource"),
    pytest.param((2, 2), (3, 3), None, 1.5, id="queue with deserved, allocated exceeds on both dimensions"),
    pytest.param(
        (2, 2), (1, 1), (1, 1), 0.5, id="queue with deserved, request should not affect share calculation"
    ),
    pytest.param((0, 0), (1, 1), None, 1.0, id="queue with deserved but zero values"),
    pytest.param((2, 2), (0, 0), None, 0.0, id="queue with deserved, allocated is zero"),
    pytest.param(None, (1, 0), None, 1.0, id="best-effort queue with only CPU allocated"),
    pytest.param(None, (0, 1), None, 1.0, id="best-effort queue with only memory allocated"),
    pytest.param(None, None, (1, 0), 1.0, id="best-effort queue with only CPU request (no allocated)"),
]


@pytest.mark.parametrize(("deserved", "allocated", "requested", "want"), CASES)
def test_update_queue_attr_share(
    deserved: tuple[float, float] | None,
    allocated: tuple[float, float] | None,
    requested: tuple[float, float] | None,
    want: float,
) -> None:
    attr = QueueAttr("test-queue", _res(deserved), Resource(), Resource())
    attr.allocated, attr.request = _res(allocated), _res(requested)
    attr.update_share()
    assert attr.share == want

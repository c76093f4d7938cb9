"""Volcano's pkg/scheduler/api/devices/nvidia/vgpu/mig_test.go, case by case (test ids are the upstream
case names; expected values are the Go test's): which MIG slice a request takes, how a slice is
marked and freed, and how the GPU memory factor scales the request and the charge.
"""

from __future__ import annotations

import pytest
from dshelpers import A100, vgpu_node

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import MigGroup, MigProfile, parse_device_config
from scheduler.plugins.deviceshare.mig import MigCard
from scheduler.plugins.deviceshare.vgpu import VgpuLedger


def group(name: str, *profiles: tuple[str, int, int]) -> MigGroup:
    return MigGroup(name, tuple(MigProfile(n, mem, count) for n, mem, count in profiles))


# -- TestFindMatch: card state = (group in use or -1, profile index -> instances in use).
# "No matching MIG template in geometry" is not here: its usage list names a profile the card's
# geometry lacks, a state our ledger (usage by profile index) cannot hold.
@pytest.mark.parametrize(
    ("uuid", "request_mem", "state", "groups", "want_id", "want_mem"),
    [
        pytest.param(
            "gpu-1234",
            10,
            (0, {}),
            [group("default", ("1g.10gb", 10240, 2))],
            "gpu-1234[default-0]",
            10240,
            id="Match 1g.10gb and available",
        ),
        pytest.param(
            "gpu-1234",
            20000,
            (0, {}),
            [group("default", ("1g.10gb", 10, 1))],
            None,
            0,
            id="No match due to memory too high",
        ),
        pytest.param("gpu-1234", 10, (0, {}), [group("")], None, 0, id="Empty geometry list"),
        pytest.param(
            "gpu-1234",
            10,
            (0, {0: {0}}),
            [group("default", ("1g.10gb", 10, 1))],
            None,
            0,
            id="MIG instance already in use",
        ),
        pytest.param(
            "gpu-1234",
            20,
            (-1, {}),
            [group("group1", ("1g.10gb", 10, 1)), group("group2", ("2g.20gb", 24, 1))],
            "gpu-1234[group2-0]",
            24,
            id="Multiple templates, pick first matching and available",
        ),
        pytest.param(
            "gpu-0005",
            5,
            (0, {}),
            [group("default", ("1g.10gb", 10, 1))],
            "gpu-0005[default-0]",
            10,
            id="Request memory smaller than template, still match",
        ),
    ],
)
def test_find_match(uuid, request_mem, state, groups, want_id, want_mem) -> None:
    card = MigCard(tuple(groups), state[0], {k: set(v) for k, v in state[1].items()})
    slot = card.pick(request_mem)
    if want_id is None:
        assert slot is None
        return
    assert slot is not None
    gi, pi, inst, mem = slot
    assert (card.slice_id(uuid, gi, pi, inst), mem) == (want_id, want_mem)


# -- TestAddAndSubMigUsed: mark a slice by its id, then free it
@pytest.mark.parametrize(
    ("uuid", "geometry", "group_name", "position", "want_mem", "want_used"),
    [
        pytest.param(
            "gpu-1",
            group("group-a", ("1g.10gb", 10240, 2)),
            "group-a",
            1,
            10240,
            1,
            id="Add then Sub with valid position",
        ),
        pytest.param(
            "gpu-2",
            group("group-b", ("2g.20gb", 20480, 3)),
            "group-b",
            1,
            20480,
            1,
            id="Add twice same instance, then sub once",
        ),
        pytest.param(
            "gpu-3",
            group("group-c", ("3g.30gb", 30720, 1)),
            "group-c",
            0,
            30720,
            0,
            id="Sub from unused slot returns 0",
        ),
        pytest.param(
            "gpu-4",
            group("group-d", ("1g.10gb", 10240, 1)),
            "nonexistent-group",
            0,
            0,
            None,
            id="Invalid group name should return 0",
        ),
    ],
)
def test_add_and_sub_mig_used(uuid, geometry, group_name, position, want_mem, want_used) -> None:
    card = MigCard((geometry,))
    loc = card.locate(ann.encode_mig_id(uuid, group_name, position))
    if want_used is None:
        assert loc is None  # nothing is marked, nothing is charged
        assert card.used == {}
        return
    assert loc is not None
    gi, pi, inst = loc
    assert card.mark(gi, pi, inst)
    assert card.groups[gi].profiles[pi].memory == want_mem
    assert inst == want_used
    assert card.used == {pi: {want_used}}
    card.unmark(pi, inst)
    assert card.used == {}


GEOMETRY = """
nvidia:
  gpuMemoryFactor: {factor}
  knownMigGeometries:
  - models: ["A100-SXM4-80GB"]
    allowedGeometries:
    - group: group1
      geometries: [{{name: 1g.10gb, memory: 10240, count: 2}}, {{name: 2g.20gb, memory: 20480, count: 1}}]
"""


def mig_ledger(factor: int) -> tuple[VgpuLedger, object]:
    cfg = parse_device_config(GEOMETRY.format(factor=factor))
    reg = [ann.RegisteredCard("gpu-1234", 10, 81920, A100, True, "mig")]
    led, why = VgpuLedger.from_node(vgpu_node("node-1", reg), cfg)
    assert led is not None, why
    assert led.mode == "mig"
    return led, cfg


# -- TestMIGFactory_AddPod_WithMemoryFactor and TestMIGFactory_SubPod_WithMemoryFactor
@pytest.mark.parametrize(
    ("factor", "request_mem", "want_mem"),
    [
        pytest.param(1, 10, 10240, id="AddPod with MemoryFactor=1, request 10MB matches 1g.10gb"),
        pytest.param(2, 6144, 5120, id="AddPod with MemoryFactor=2, request 6GB matches 1g.10gb"),
    ],
)
def test_mig_factory_add_pod_with_memory_factor(factor, request_mem, want_mem) -> None:
    led, _ = mig_ledger(factor)
    assert led.add_pod("pod", "", [[ann.DeviceEntry("gpu-1234[group1-0]", request_mem, 50)]])
    assert led.card_state() == [(1, want_mem, 50)]
    assert [(ch.mem, ch.cores) for ch in led.pods["pod"][1]] == [(want_mem, 50)]


@pytest.mark.parametrize(
    ("factor", "request_mem"),
    [
        pytest.param(1, 10, id="SubPod with MemoryFactor=1, request 10MB from 1g.10gb"),
        pytest.param(2, 6144, id="SubPod with MemoryFactor=2, request 6GB from 1g.10gb"),
    ],
)
def test_mig_factory_sub_pod_with_memory_factor(factor, request_mem) -> None:
    led, _ = mig_ledger(factor)
    assert led.add_pod("pod", "", [[ann.DeviceEntry("gpu-1234[group1-0]", request_mem, 50)]])
    assert led.remove_pod("pod")
    assert led.card_state() == [(0, 0, 0)]
    assert "pod" not in led.pods

"""A session opens its vGPU ledgers with the usual node's table rows queued and written in one
flush (VgpuLedger.queued, VgpuTable.queue_row/flush): the table and ledgers are those from_node
builds node by node, whatever mix of usual and other nodes, and whichever pods are charged between."""

from __future__ import annotations

from dshelpers import A100, A100_GEOMETRY, T4, vgpu_node
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.model.node import NodeInfo
from scheduler.model.resources import Resource
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import parse_device_config
from scheduler.plugins.deviceshare.vgpu import VgpuLedger, VgpuTable

CFG = parse_device_config(A100_GEOMETRY)

# (cards, devmem, kind): the usual node, one listing an unhealthy card, one of MIG cards, or one
# whose registration cannot be read
node_spec = st.tuples(
    st.integers(1, 4),
    st.sampled_from([8000, 16384]),
    st.sampled_from(["usual", "usual", "unhealthy", "mig", "bad"]),
)

_TABLE_ARRAYS = (
    "starts",
    "node_flags",
    "count",
    "devmem",
    "used_num",
    "used_mem",
    "used_cores",
    "static_ok",
    "out_code",
    "out_score",
    "node_ver",
)


def _node(i: int, spec: tuple[int, int, str]):
    n_cards, devmem, kind = spec
    if kind == "bad":
        return vgpu_node(f"n{i}", "not a registration")
    mig = kind == "mig"
    regs = [
        ann.RegisteredCard(f"GPU-{i}-{c}", 4, 81920 if mig else devmem, A100 if mig else T4, True,
                           "mig" if mig else "hami-core")
        for c in range(n_cards)
    ]  # fmt: skip
    extra = {ann.GPU_UNHEALTHY_IDS: f"GPU-{i}-0"} if kind == "unhealthy" else None
    return vgpu_node(f"n{i}", regs, extra)


def _charge(led: VgpuLedger, uid: str) -> None:
    led.add_pod(uid, "ml/g", [[ann.DeviceEntry(led.uuids[-1], 1000, 10)]])


def _view(table: VgpuTable, leds: list[VgpuLedger | None]) -> tuple:
    arrays = tuple(list(getattr(table, name)) for name in _TABLE_ARRAYS)
    ledgers = tuple(
        None if led is None else (led.idx, led.base, led.n, led.mode, led.clean, led.state(), led.version)
        for led in leds
    )
    return arrays, ledgers, table.group_cards, table.python_nodes, table.ledgers == [x for x in leds if x]


@settings(max_examples=80, deadline=None)
@given(st.lists(node_spec, min_size=1, max_size=8), st.lists(st.booleans(), min_size=8, max_size=8))
def test_queued_rows_give_the_table_from_node_builds(specs, charged) -> None:
    nodes = [_node(i, s) for i, s in enumerate(specs)]
    for node in nodes:  # the registrations decoded once, as by the sessions before
        VgpuLedger.from_node(node, CFG, VgpuTable())
    direct = VgpuTable()
    direct_leds = []
    for i, node in enumerate(nodes):
        led = VgpuLedger.from_node(node, CFG, direct)[0]
        if led is not None and charged[i]:
            _charge(led, f"p{i}")
        direct_leds.append(led)
    queued = VgpuTable()
    queued_leds = []
    for i, node in enumerate(nodes):
        led = VgpuLedger.queued(node, CFG, queued)
        if led is None:
            led = VgpuLedger.from_node(node, CFG, queued)[0]
        elif specs[i][2] != "usual":
            raise AssertionError(f"node {i} ({specs[i][2]}) is not the usual node")
        if led is not None and charged[i]:
            queued.flush()  # a pod's charge reads the node's rows
            _charge(led, f"p{i}")
        queued_leds.append(led)
    queued.flush()
    assert _view(queued, queued_leds) == _view(direct, direct_leds)
    assert all(led is None for led, s in zip(queued_leds, specs, strict=True) if s[2] == "bad")


def test_a_usual_node_without_vgpu_resources_is_left_to_from_node() -> None:
    """queued builds nothing for a node whose allocatable lacks a vGPU resource: from_node's
    refusal (with its reason) stands."""
    usual = _node(0, (2, 8000, "usual"))
    VgpuLedger.from_node(usual, CFG, VgpuTable())
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", ann.VGPU_NUMBER: "20", ann.VGPU_MEMORY: "65536"}
    node = NodeInfo("n0", Resource.from_list(alloc), annotations=dict(usual.annotations))
    table = VgpuTable()
    assert VgpuLedger.queued(node, CFG, table) is None
    assert table.ledgers == []
    assert VgpuLedger.from_node(node, CFG, table) == (None, f"node allocatable has no {ann.VGPU_CORES}")

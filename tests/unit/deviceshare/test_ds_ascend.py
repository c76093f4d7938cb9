"""HAMi Ascend vNPU (spec 5.2): registration, request parsing, template rounding, fit, chip order,
Ascend910 network topology, the exact pod annotations, rebuild from them, and bad input.

Worked examples come from Volcano's pkg/scheduler/api/devices/ascend/hami tests (trimMemory, fit)
and the rules of spec 5.2.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dshelpers import pod

from scheduler.model.node import NodeInfo
from scheduler.model.resources import Resource
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.ascend import AscendLedger, NpuChip, ascend_card_metrics
from scheduler.plugins.deviceshare.config import (
    DEFAULT_CONFIG,
    DEFAULT_VNPU,
    POLICY_BINPACK,
    POLICY_NONE,
    POLICY_SPREAD,
    parse_device_config,
)
from scheduler.plugins.deviceshare.requests import ascend_request, trim_to_template

P310 = DEFAULT_VNPU  # Ascend310P: allocatable 21527 of 24576 MiB, 8 AI cores, vir01/02/04
RES, MEM, CORE = "huawei.com/Ascend310P", "huawei.com/Ascend310P-memory", "huawei.com/Ascend310P-core"

CFG_910 = parse_device_config("""
vnpus:
  hamiVnpuCore: false
  configs:
  - chipName: 910B3
    commonWord: Ascend910B3
    resourceName: huawei.com/Ascend910B3
    resourceMemoryName: huawei.com/Ascend910B3-memory
    memoryAllocatable: 65536
    memoryCapacity: 65536
    aiCore: 20
    aiCPU: 7
    templates:
    - {name: vir05_1c_16g, memory: 16384, aiCore: 5, aiCPU: 1}
    - {name: vir10_3c_32g, memory: 32768, aiCore: 10, aiCPU: 3}
""")
B3 = CFG_910.vnpus[0]


def chips(
    n: int,
    devmem: int = 21527,
    count: int = 7,
    devcore: int = 8,
    word: str = "Ascend310P",
    health: list[bool] | None = None,
    networks: list[int] | None = None,
) -> list[ann.AscendCard]:
    return [
        ann.AscendCard(
            f"{word}-chip-{i}",
            count,
            devmem,
            devcore,
            word,
            True if health is None else health[i],
            -1 if networks is None else networks[i],
            i,
        )
        for i in range(n)
    ]


def npu_node(
    name: str,
    registered: list[ann.AscendCard] | str,
    word: str = "Ascend310P",
    annotations: dict[str, str] | None = None,
) -> NodeInfo:
    reg = registered if isinstance(registered, str) else ann.encode_ascend_register(registered)
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", f"huawei.com/{word}": "8"}
    node = NodeInfo(
        name,
        Resource.from_list(alloc),
        annotations={ann.ascend_register_key(word): reg, **(annotations or {})},
    )
    node.raw_capacity = dict(alloc)
    return node


def ledger(node: NodeInfo, chip=P310, cfg=DEFAULT_CONFIG) -> AscendLedger:
    led, why = AscendLedger.from_node(node, chip, cfg)
    assert led is not None, why
    return led


def npu_limits(
    number: int | None = 1, memory: int | None = None, cores: int | None = None, res: str = RES
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if number is not None:
        out[res] = str(number)
    if memory is not None:
        out[f"{res}-memory"] = str(memory)
    if cores is not None:
        out[f"{res}-core"] = str(cores)
    return out


def request(*limits: dict[str, Any], annotations: dict[str, str] | None = None, chip=P310):
    r, err = ascend_request(pod("p", *limits, annotations=annotations), chip)
    assert r is not None, err
    return r


# -- template rounding (upstream Test_trimMemory, 310P) ----------------------------------------------
@pytest.mark.parametrize(
    ("asked", "want"),
    [
        (1, (3072, "vir01")),
        (3071, (3072, "vir01")),
        (3072, (3072, "vir01")),
        (3073, (6144, "vir02")),
        (6145, (12288, "vir04")),
        (12288, (12288, "vir04")),
        (12289, (21527, "")),
        (21528, (21527, "")),
        (24576, (21527, "")),
        (24577, None),
    ],
)
def test_memory_is_rounded_up_to_the_smallest_template(asked: int, want: tuple[int, str] | None) -> None:
    assert trim_to_template(P310, asked) == want


# -- per-chip fit (upstream Test_fit) ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("used", "used_mem", "used_cores", "mem", "cores", "hami_core", "fits"),
    [
        (1, 3072, 0, 3072, 0, False, True),  # 1024 MiB asked -> vir01 3072
        (1, 3072, 0, 21527, 0, False, False),  # whole chip on a shared chip
        (1, 12288, 0, 6144, 0, False, True),
        (1, 12288, 6, 6144, 4, False, False),  # 8 AI cores, 6 used, 4 asked
        (0, 0, 90, 1024, 20, True, False),  # hami-core: percent of a chip, 90 used + 20
        (0, 0, 0, 1024, 20, True, True),
        (1, 1024, 10, 1024, 100, True, False),  # 100 % needs an idle chip
        (1, 1024, 100, 1024, 0, True, False),  # a chip taken exclusively refuses zero-core sharers
        (7, 7000, 0, 1024, 0, True, False),  # split count reached
    ],
)
def test_chip_fit_rules(used, used_mem, used_cores, mem, cores, hami_core, fits) -> None:
    c = NpuChip(0, "x", 7, 21527, 8, True, -1, used, used_mem, used_cores)
    assert AscendLedger.chip_fits(c, mem, cores, hami_core) is fits


# -- requests ----------------------------------------------------------------------------------------
def test_request_parsing_and_impossible_requests() -> None:
    r = request(npu_limits(2), {"cpu": "1"}, npu_limits(None, memory=2048))
    assert [(c.index, c.nums, c.mem, c.cores) for c in r.containers] == [(0, 2, 0, 0), (2, 1, 2048, 0)]
    assert ascend_request(pod("cpu-only", {"cpu": "1"}), P310) == (None, "")
    # a core request alone does not make the pod use the chip kind (spec 1.3)
    assert ascend_request(pod("cores", {CORE: "2"}), P310) == (None, "")
    bad = {
        "partial memory allocation when requesting multiple": (npu_limits(2, memory=3000), {}),
        "more than a Ascend310P holds": (npu_limits(1, memory=30000), {}),
        "more than the 8 AI cores": (npu_limits(1, memory=3000, cores=9), {}),
        "more than 100 percent": (npu_limits(1, memory=3000, cores=150), {ann.ASCEND_VNPU_MODE: "hami-core"}),
        "unknown huawei.com/vnpu-mode": (npu_limits(1), {ann.ASCEND_VNPU_MODE: "template"}),
        "is negative": (npu_limits(-1), {}),
        "must be a whole number": ({MEM: "0.5"}, {}),
    }
    for why, (limits, extra) in bad.items():
        r2, err = ascend_request(pod("bad", limits, annotations=extra), P310)
        assert r2 is None and why in err, (why, err)
    # several whole chips are fine, also when the memory asked is the whole allocatable memory
    assert request(npu_limits(2, memory=21527)).total_chips == 2


# -- allocation: exact annotations ---------------------------------------------------------------------
def test_template_pod_gets_the_annotations_the_hami_ascend_plugin_reads() -> None:
    led = ledger(npu_node("n", chips(2)))
    r = request(npu_limits(1, memory=2048))
    f = led.fit(r, POLICY_NONE)
    assert f.ok and [[(p.chip, p.mem, p.template) for p in s] for s in f.picks] == [[(0, 3072, "vir01")]]
    got = led.annotations(r, f.picks, 1_714_557_600.5)
    assert got == {
        "hami.io/Ascend310P-devices-to-allocate": "Ascend310P-chip-0,Ascend310P,3072,0:;",
        "hami.io/Ascend310P-devices-allocated": "Ascend310P-chip-0,Ascend310P,3072,0:;",
        "predicate-time": "1714557600",
        "huawei.com/Ascend310P": '[{"UUID":"Ascend310P-chip-0","temp":"vir01"}]',
        "hami.io/vgpu-node": "n",
        "hami.io/vgpu-time": "1714557600",
        "hami.io/bind-phase": "allocating",
        "hami.io/bind-time": "1714557600",
    }


def test_whole_chip_has_no_template_and_hami_core_writes_memory_and_cores() -> None:
    led = ledger(npu_node("n", chips(1)))
    r = request(npu_limits(1))
    f = led.fit(r, POLICY_NONE)
    assert f.picks[0][0].mem == 21527
    assert led.annotations(r, f.picks, 0)["huawei.com/Ascend310P"] == '[{"UUID":"Ascend310P-chip-0"}]'
    core = ledger(npu_node("h", chips(1), annotations={ann.HAMI_VNPU_CORE: "true"}))
    hr = request(npu_limits(1, memory=1000, cores=20), annotations={ann.ASCEND_VNPU_MODE: "hami-core"})
    hf = core.fit(hr, POLICY_NONE)
    assert hf.ok and hf.picks[0][0].mem == 1000  # hami-core: no template rounding
    anns = core.annotations(hr, hf.picks, 0)
    assert json.loads(anns["huawei.com/Ascend310P"]) == [
        {"UUID": "Ascend310P-chip-0", "memory": 1000, "core": 20}
    ]
    assert anns["hami.io/Ascend310P-devices-allocated"] == "Ascend310P-chip-0,Ascend310P,1000,20:;"
    # the node's hami-vnpu-core annotation decides; without it the configuration's default (false)
    plain = ledger(npu_node("t", chips(1), annotations={ann.HAMI_VNPU_CORE: "false"}))
    assert not plain.fit(hr, POLICY_NONE).ok and "hami-vnpu-core" in plain.fit(hr, POLICY_NONE).reason


def test_policies_order_chips_and_score_nodes() -> None:
    led = ledger(npu_node("n", chips(3)))
    led.add_pod("old", [[ann.DeviceEntry("Ascend310P-chip-1", 6144, 0)]])
    r = request(npu_limits(1, memory=3000))
    binpack = led.fit(r, POLICY_BINPACK)
    assert binpack.picks[0][0].chip == 1 and binpack.score == pytest.approx(100 * 6144 / 21527)
    spread = led.fit(r, POLICY_SPREAD)
    assert spread.picks[0][0].chip == 0 and spread.score == 100.0
    assert led.fit(r, POLICY_NONE).score == 0.0
    # two containers never share a chip; later containers skip what earlier ones took
    two = led.fit(request(npu_limits(1, memory=3000), npu_limits(1, memory=3000)), POLICY_BINPACK)
    assert [s[0].chip for s in two.picks] == [1, 0]


def test_ascend910_takes_chips_from_the_best_connected_network() -> None:
    regs = chips(8, devmem=65536, count=4, devcore=20, word="Ascend910B3", networks=[0, 0, 0, 0, 1, 1, 1, 1])
    led = ledger(npu_node("n", regs, word="Ascend910B3"), chip=B3, cfg=CFG_910)
    assert led.topology
    # chips 0 and 1 are full: network 0 has 2 fitting chips, network 1 has 4
    for i in (0, 1):
        led.add_pod(f"full-{i}", [[ann.DeviceEntry(f"Ascend910B3-chip-{i}", 65536, 0)]])
    r = request(npu_limits(4, res="huawei.com/Ascend910B3"), chip=B3)
    f = led.fit(r, POLICY_NONE)
    assert f.ok and sorted(p.chip for p in f.picks[0]) == [4, 5, 6, 7]
    assert f.score == 10.0  # all four on one network: the full locality bonus
    # without NetworkID on every chip there is no topology step: first fitting chips in order
    flat = ledger(
        npu_node("m", chips(8, devmem=65536, count=4, devcore=20, word="Ascend910B3"), word="Ascend910B3"),
        chip=B3,
        cfg=CFG_910,
    )
    assert not flat.topology and [p.chip for p in flat.fit(r, POLICY_NONE).picks[0]] == [0, 1, 2, 3]


def test_uuid_filters_and_unhealthy_chips() -> None:
    led = ledger(npu_node("n", chips(3, health=[False, True, True])))
    r = request(npu_limits(1, memory=1000))
    # upstream would hand out the unhealthy chip 0 (kubelet then refuses the pod); we skip it
    assert led.fit(r, POLICY_NONE).picks[0][0].chip == 1
    deny = request(
        npu_limits(1, memory=1000), annotations={"hami.io/no-use-Ascend310P-uuid": "Ascend310P-chip-1"}
    )
    assert led.fit(deny, POLICY_NONE).picks[0][0].chip == 2
    allow = request(
        npu_limits(1, memory=1000), annotations={"hami.io/use-Ascend310P-uuid": "Ascend310P-chip-0"}
    )
    f = led.fit(allow, POLICY_NONE)
    assert not f.ok and "no enough ascend device available" in f.reason


def test_rebuild_from_annotations_equals_live_and_release_frees() -> None:
    node = npu_node("n", chips(2))
    live = ledger(node)
    placed = {}
    for i, mem in enumerate((2048, 5000, 12000, 100)):
        r = request(npu_limits(1, memory=mem))
        f = live.fit(r, POLICY_BINPACK)
        assert f.ok
        live.add_pod(f"u{i}", live.segments(f.picks))
        placed[f"u{i}"] = live.annotations(r, f.picks, 0)["hami.io/Ascend310P-devices-allocated"]
    rebuilt = ledger(node)
    for uid, value in placed.items():
        assert rebuilt.add_pod(uid, ann.decode_generic_devices(value))
        assert not rebuilt.add_pod(uid, ann.decode_generic_devices(value))  # counted once
    assert rebuilt.state() == live.state()
    assert sum(c.used_mem for c in live.chips) == 3072 + 6144 + 12288 + 3072  # vir01, vir02, vir04, vir01
    for uid in placed:
        assert live.remove_pod(uid)
    assert all((c.used, c.used_mem, c.used_cores) == (0, 0, 0) for c in live.chips)
    # entries naming a chip the node no longer has do not count
    assert rebuilt.add_pod("ghost", [[ann.DeviceEntry("gone", 3072, 0, "Ascend310P")]])
    assert rebuilt.pods["ghost"] == []
    m = ascend_card_metrics(live)
    assert [(x["index"], x["memory_limit"], x["shared_pods"]) for x in m] == [(0, 21527, 0), (1, 21527, 0)]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "non-empty JSON array"),
        ('{"id":"x"}', "non-empty JSON array"),
        ('[{"count":7}]', "without an id"),
        ('[{"id":"x","count":"7"}]', "count '7' is not an integer"),
        ('[{"id":"x","health":"true"}]', "health 'true' is not a boolean"),
    ],
)
def test_garbled_registration_gives_no_ledger_and_says_why(value: str, why: str) -> None:
    led, reason = AscendLedger.from_node(npu_node("n", value), P310, DEFAULT_CONFIG)
    assert led is None and why in reason


def test_node_without_the_chip_resource_or_registration() -> None:
    no_res = npu_node("n", chips(1))
    no_res.allocatable.scalars.pop(RES)
    assert AscendLedger.from_node(no_res, P310, DEFAULT_CONFIG) == (None, "")  # simply no such chip
    no_reg = npu_node("m", chips(1))
    no_reg.annotations.clear()
    led, why = AscendLedger.from_node(no_reg, P310, DEFAULT_CONFIG)
    assert led is None and "hami.io/node-register-Ascend310P" in why


def test_register_roundtrip_is_what_the_plugin_marshals() -> None:
    regs = chips(2, devmem=65536, count=4, devcore=20, word="Ascend910B3", networks=[0, 1])
    text = ann.encode_ascend_register(regs)
    # Go's omitempty leaves out index 0 and unhealthy=false; NetworkID arrives as a JSON number
    assert json.loads(text)[0] == {
        "id": "Ascend910B3-chip-0",
        "count": 4,
        "devmem": 65536,
        "devcore": 20,
        "type": "Ascend910B3",
        "health": True,
        "custominfo": {"NetworkID": 0},
    }
    assert ann.decode_ascend_register(text) == (regs, "")
    assert ann.decode_ascend_register('[{"id":"x","custominfo":{"NetworkID":1.0}}]')[0][0].network_id == 1


def test_a_memoised_fit_is_not_reused_after_a_charge_or_a_release() -> None:
    """The ledger keeps its last fit for the same request (predicate, score and allocation ask
    in a row); a charge or a release in between gives a fresh answer."""
    led = ledger(npu_node("n", chips(1, count=2)))
    r = request(npu_limits(1, memory=12000))
    first = led.fit(r, POLICY_BINPACK)
    assert first.ok and led.fit(r, POLICY_BINPACK) is first
    led.add_pod("u1", led.segments(first.picks))
    second = led.fit(r, POLICY_BINPACK)
    assert not second.ok  # 12288 of 21527 MiB taken: a second vir04 does not fit
    assert second == led.fit_in_python(r, POLICY_BINPACK)
    led.remove_pod("u1")
    assert led.fit(r, POLICY_BINPACK) == first
    assert led.fit(r, POLICY_SPREAD) == led.fit_in_python(r, POLICY_SPREAD)


def test_a_registration_decoded_once_gives_every_ledger_its_own_chips() -> None:
    node = npu_node("n", chips(2))
    a, b = ledger(node), ledger(node)
    f = a.fit(request(npu_limits(1, memory=3000)), POLICY_BINPACK)
    a.add_pod("u", a.segments(f.picks))
    assert [c.used for c in a.chips] != [c.used for c in b.chips]
    assert [c.id for c in a.chips] == [c.id for c in b.chips]

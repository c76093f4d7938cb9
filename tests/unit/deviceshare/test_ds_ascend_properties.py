"""Properties of HAMi Ascend ledgers over random nodes and pods: no chip ever holds more pods,
memory or AI cores than it has, a pod never takes one chip twice, and the ledger rebuilt from the
pods' `devices-allocated` annotations equals the live one after any allocations and releases."""

from __future__ import annotations

from dshelpers import pod
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ds_ascend import npu_node

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.ascend import AscendLedger
from scheduler.plugins.deviceshare.config import DEFAULT_CONFIG, DEFAULT_VNPU
from scheduler.plugins.deviceshare.requests import ascend_request

RES = DEFAULT_VNPU.resource_name

node_specs = st.lists(
    # chips, split count, hami-core node, health of chip 0
    st.tuples(st.integers(1, 4), st.integers(1, 7), st.booleans(), st.booleans()),
    min_size=1,
    max_size=3,
)
container = st.tuples(
    st.integers(1, 2),
    st.sampled_from([None, 1000, 2000, 3072, 7000, 13000, 21527]),
    st.sampled_from([None, 0, 3, 5, 8]),
)
op = st.one_of(
    st.tuples(
        st.just("alloc"), st.lists(container, min_size=1, max_size=2), st.integers(0, 2), st.integers(0, 2)
    ),
    st.tuples(st.just("release"), st.integers(0, 50)),
)


def build(specs) -> list[AscendLedger]:
    out = []
    for i, (n, count, core, healthy) in enumerate(specs):
        regs = [
            ann.AscendCard(
                f"n{i}-c{c}", count, 21527, 100 if core else 8, "Ascend310P", healthy or c > 0, -1, c
            )
            for c in range(n)
        ]
        node = npu_node(f"n{i}", regs, annotations={ann.HAMI_VNPU_CORE: "true" if core else "false"})
        led, why = AscendLedger.from_node(node, DEFAULT_VNPU, DEFAULT_CONFIG)
        assert led is not None, why
        out.append(led)
    return out


def check_limits(led: AscendLedger) -> None:
    for c in led.chips:
        assert 0 <= c.used <= c.count
        assert 0 <= c.used_mem <= c.devmem
        assert 0 <= c.used_cores <= c.devcore
    for charges in led.pods.values():
        chips = [i for i, _, _ in charges]
        assert len(chips) == len(set(chips))  # never the same chip twice for one pod


@settings(max_examples=150, deadline=None)
@given(node_specs, st.lists(op, max_size=25))
def test_ascend_ledgers_never_overfill_and_rebuild_equals_live(specs, ops) -> None:
    leds = build(specs)
    live: dict[str, tuple[int, str]] = {}
    seq = 0
    for o in ops:
        if o[0] == "alloc":
            _, conts, node_i, policy = o
            led = leds[node_i % len(leds)]
            hami_core = led.hami_core
            limits = []
            for nums, mem, cores in conts:
                lim = {RES: str(nums)}
                if mem is not None and (nums == 1 or mem == 21527 or hami_core):
                    lim[f"{RES}-memory"] = str(mem)
                if cores is not None:
                    lim[f"{RES}-core"] = str(cores * (12 if hami_core else 1))
                limits.append(lim)
            seq += 1
            p = pod(f"p{seq}", *limits, annotations={ann.ASCEND_VNPU_MODE: "hami-core"} if hami_core else {})
            r, err = ascend_request(p, DEFAULT_VNPU)
            assert r is not None, err
            f = led.fit(r, policy)
            if f.ok:
                assert led.add_pod(p.uid, led.segments(f.picks))
                value = led.annotations(r, f.picks, 0)[ann.ascend_allocated_key("Ascend310P")]
                live[p.uid] = (leds.index(led), value)
        elif live:
            uid = sorted(live)[o[1] % len(live)]
            node_i, _ = live.pop(uid)
            assert leds[node_i].remove_pod(uid)
        for led in leds:
            check_limits(led)
    rebuilt = build(specs)
    for uid, (node_i, value) in live.items():
        rebuilt[node_i].add_pod(uid, ann.decode_generic_devices(value))
    assert [r.state() for r in rebuilt] == [led.state() for led in leds]

"""Properties over random clusters: allocations never overfill a card, and a ledger rebuilt from
the pods' annotations equals the live one, whatever allocations, releases and deletions happened."""

from __future__ import annotations

from dshelpers import A100, A100_GEOMETRY, T4, pod, share_node, vgpu_limits, vgpu_node
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import parse_device_config
from scheduler.plugins.deviceshare.gpushare import GpuShareLedger
from scheduler.plugins.deviceshare.requests import gpushare_request, vgpu_request
from scheduler.plugins.deviceshare.vgpu import VgpuLedger, VgpuTable

CFG = parse_device_config(A100_GEOMETRY)

node_specs = st.lists(
    st.tuples(st.integers(1, 4), st.integers(1, 4), st.sampled_from([8000, 16384]), st.booleans()),
    min_size=1,
    max_size=3,
)
container = st.tuples(
    st.integers(1, 2),
    st.sampled_from([None, 500, 3000, 9000, 20000]),
    st.sampled_from([None, 0, 30, 100]),
    st.sampled_from([None, 50, 100]),
)
op = st.one_of(
    st.tuples(
        st.just("alloc"),
        st.lists(container, min_size=1, max_size=2),
        st.integers(0, 2),
        st.integers(0, 2),
        st.sampled_from(["", "g1", "g2"]),
    ),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("restore"), st.integers(0, 50)),
)


def build(specs) -> list:
    nodes = []
    for i, (n_cards, count, devmem, mig) in enumerate(specs):
        regs = [
            ann.RegisteredCard(
                f"GPU-{i}-{c}",
                count,
                81920 if mig else devmem,
                A100 if mig else T4,
                True,
                "mig" if mig else "hami-core",
            )
            for c in range(n_cards)
        ]
        nodes.append(vgpu_node(f"n{i}", regs))
    return nodes


def check_limits(led: VgpuLedger) -> None:
    t, b = led.table, led.base
    for c in range(led.n):
        g = b + c
        assert 0 <= t.used_num[g] <= t.count[g]
        assert 0 <= t.used_mem[g] <= t.devmem[g]
        assert 0 <= t.used_cores[g] <= 100


@settings(max_examples=150, deadline=None)
@given(node_specs, st.lists(op, max_size=25))
def test_vgpu_ledgers_never_overfill_and_rebuild_equals_live(specs, ops) -> None:
    nodes = build(specs)
    table = VgpuTable()
    leds = [VgpuLedger.from_node(n, CFG, table)[0] for n in nodes]
    live: dict[str, tuple[int, str, str]] = {}  # uid -> (node, group key, vgpu-ids-new)
    released: dict[str, tuple[int, str, str]] = {}
    seq = 0
    for o in ops:
        if o[0] == "alloc":
            _, conts, node_i, policy, group = o
            node_i %= len(leds)
            limits = [vgpu_limits(n, m, c, p) for n, m, p, c in conts]
            annotations = {ann.GROUP_NAME: group, ann.VGPU_PODGROUP_POLICY: "spread"} if group else {}
            seq += 1
            p = pod(f"p{seq}", *limits, annotations=annotations)
            r, err = vgpu_request(p, CFG)
            assert r is not None, err
            f = leds[node_i].fit(r, policy)
            if f.ok:
                segs = leds[node_i].segments(r, f.picks)
                assert leds[node_i].add_pod(p.uid, r.group_key, segs)
                live[p.uid] = (node_i, r.group_key, ann.encode_pod_devices(segs))
        elif live and o[0] in ("release", "delete"):
            uid = sorted(live)[o[1] % len(live)]
            node_i, group, ids = live.pop(uid)
            assert leds[node_i].remove_pod(uid)
            if o[0] == "release":
                released[uid] = (node_i, group, ids)
        elif released and o[0] == "restore":
            # an undone eviction takes back the devices of its annotations, if still free
            uid = sorted(released)[o[1] % len(released)]
            node_i, group, ids = released.pop(uid)
            before = leds[node_i].state()
            leds[node_i].add_pod(uid, group, ann.decode_pod_devices(ids))
            live[uid] = (node_i, group, ids)
            try:
                for led in leds:
                    check_limits(led)
                # a MIG slice another pod took meanwhile is not counted twice: the restore failed
                entries = sum(len(seg) for seg in ann.decode_pod_devices(ids))
                assert len(leds[node_i].pods[uid][1]) == entries
            except AssertionError:
                leds[node_i].remove_pod(uid)
                live.pop(uid)
                assert leds[node_i].state() == before
        for led in leds:
            check_limits(led)
    table2 = VgpuTable()
    rebuilt = [VgpuLedger.from_node(n, CFG, table2)[0] for n in nodes]
    for uid, (node_i, group, ids) in live.items():
        rebuilt[node_i].add_pod(uid, group, ann.decode_pod_devices(ids))
    assert [r.state() for r in rebuilt] == [led.state() for led in leds]
    assert table2.group_cards == {k: v for k, v in table.group_cards.items() if v}


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 4),
    st.lists(
        st.tuples(
            st.booleans(), st.integers(1, 6000), st.integers(1, 3), st.integers(0, 2), st.integers(0, 30)
        ),
        max_size=20,
    ),
)
def test_gpushare_ledgers_never_overfill_and_rebuild_equals_live(number, ops) -> None:
    node = share_node("n", memory=str(8000 * number), number=str(number))
    led = GpuShareLedger.from_node(node)
    assert led is not None
    live: dict[str, tuple[int, list[int]]] = {}
    for i, (by_memory, mem, k, policy, victim) in enumerate(ops):
        if victim >= 25 and live:
            uid = sorted(live)[victim % len(live)]
            assert led.remove_pod(uid)
            live.pop(uid)
            continue
        limits = {ann.GPU_MEMORY: str(mem)} if by_memory else {ann.GPU_NUMBER: str(k)}
        r, _ = gpushare_request(pod(f"p{i}", limits), by_memory, not by_memory)
        assert r is not None
        f = led.fit(r, policy)
        if f.ok:
            led.add_pod(f"p{i}", r.memory, "Running", f.cards)
            live[f"p{i}"] = (r.memory, f.cards)
        for card in led.cards.values():
            assert card.used <= card.memory
    rebuilt = GpuShareLedger.from_node(node)
    assert rebuilt is not None
    for uid, (mem, idx) in live.items():
        rebuilt.add_pod(uid, mem, "Running", ann.decode_gpu_index(ann.encode_gpu_index(idx)) or [])
    assert rebuilt.state() == led.state()


def _twisted_request(
    seq: int, conts: list, twist: str, use: str = "GPU-0-0,GPU-4-1,GPU-9-9", nouse: str = "GPU-0-0,GPU-3-0"
) -> tuple:
    """Pod p<seq> with the containers' vGPU limits and a twist (the card UUIDs `use` or `nouse`, or a
    mode), and its parsed request."""
    annotations = {}
    if twist == "use":
        annotations[ann.VGPU_USE_UUID] = use
    elif twist == "nouse":
        annotations[ann.VGPU_NOUSE_UUID] = nouse
    elif twist:
        annotations[ann.VGPU_MODE] = twist
    p = pod(f"p{seq}", *[vgpu_limits(n, m, c, pc) for n, m, pc, c in conts], annotations=annotations)
    r, err = vgpu_request(p, CFG)
    assert r is not None, err
    return p, r


@settings(max_examples=100, deadline=None)
@given(
    node_specs,
    st.lists(
        st.tuples(
            st.lists(container, min_size=1, max_size=2),
            st.integers(0, 2),
            st.sampled_from(["", "use", "nouse", "mig", "hami-core"]),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_whole_table_scan_answers_like_the_per_node_fit(specs, pods) -> None:
    """The plugin's ScanCache (scans shared by equal requests, rescanned node by node after each
    charge) gives every node the same fit, score and reason as `VgpuLedger.fit`, while pods are
    being placed."""
    from scheduler.plugins.deviceshare.vgpu import ScanCache

    nodes = build(specs)
    table = VgpuTable()
    leds = [VgpuLedger.from_node(n, CFG, table)[0] for n in nodes]
    cache = ScanCache()
    for seq, (conts, policy, twist, place) in enumerate(pods):
        p, r = _twisted_request(seq, conts, twist, use="GPU-0-0,GPU-9-9", nouse="GPU-0-0")
        for led in leds:
            f = led.fit(r, policy)
            assert cache.node_fit(led, r, policy) == (f.ok, f.reason, f.score if f.ok else 0.0)
        target = leds[place % len(leds)]
        f = target.fit(r, policy)
        if f.ok:  # a charge changes the table: the next answers must come from a fresh scan
            target.add_pod(p.uid, r.group_key, target.segments(r, f.picks))


@settings(max_examples=60, deadline=None)
@given(
    node_specs,
    st.lists(
        st.tuples(
            st.lists(container, min_size=1, max_size=2),
            st.integers(0, 2),
            st.sampled_from(["", "use", "nouse", "mig"]),
            st.integers(0, 40),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_scans_brought_up_to_date_node_by_node_answer_like_the_per_node_fit(specs, pods) -> None:
    """With more than 8 nodes per change, ScanCache refits only the changed nodes (one listed-node
    call, MIG nodes and card filters included): every request asked so far is asked again after
    every charge, and each node's answer is `VgpuLedger.fit`'s."""
    from scheduler.plugins.deviceshare.vgpu import ScanCache

    nodes = build(specs * 9)  # 9 to 27 nodes: a single change is below the full-rescan threshold
    table = VgpuTable()
    leds = [VgpuLedger.from_node(n, CFG, table)[0] for n in nodes]
    cache = ScanCache()
    asked: list = []
    for seq, (conts, policy, twist, place) in enumerate(pods):
        p, r = _twisted_request(seq, conts, twist)
        asked.append((r, policy))
        for req, pol in asked:
            for led in leds:
                f = led.fit(req, pol)
                assert cache.node_fit(led, req, pol) == (f.ok, f.reason, f.score if f.ok else 0.0)
        target = leds[place % len(leds)]
        f = target.fit(r, policy)
        if f.ok:
            target.add_pod(p.uid, r.group_key, target.segments(r, f.picks))


@settings(max_examples=60, deadline=None)
@given(
    node_specs,
    st.lists(
        st.tuples(
            st.lists(container, min_size=1, max_size=2),
            st.integers(0, 2),
            st.sampled_from(["", "", "use", "nouse", "mig"]),
            st.integers(0, 40),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_kept_fit_is_the_fit_of_the_node_as_it_is_now(specs, pods) -> None:
    """ScanCache.kept_fit (the cards a scan chose, reused when a pod is committed) is exactly
    `VgpuLedger.fit` whenever it answers: after charges on nodes the scans have not looked at again
    (`ask`: whether the pod's answers are asked before its charge), it must not answer for them
    from the stale scan."""
    from scheduler.plugins.deviceshare.vgpu import ScanCache

    nodes = build(specs * 9)
    table = VgpuTable()
    leds = [VgpuLedger.from_node(n, CFG, table)[0] for n in nodes]
    cache = ScanCache()
    asked: list = []
    for seq, (conts, policy, twist, place, ask) in enumerate(pods):
        p, r = _twisted_request(seq, conts, twist)
        asked.append((r, policy))
        if ask:
            cache.node_fit(leds[0], r, policy)  # brings the request's scan up to date
        for req, pol in asked:
            for led in leds:
                kept = cache.kept_fit(led, req, pol)
                if kept is not None:
                    assert kept == led.fit(req, pol)
        target = leds[place % len(leds)]
        f = target.fit(r, policy)
        if f.ok:
            target.add_pod(p.uid, r.group_key, target.segments(r, f.picks))


def test_kept_fit_answers_for_an_unchanged_node_only() -> None:
    """A scan's cards are reused for a node no charge touched since; after a charge there the
    commit fits afresh until the scan is brought up to date."""
    from scheduler.plugins.deviceshare.vgpu import ScanCache

    nodes = build([(4, 10, 16384, False)] * 9)
    table = VgpuTable()
    leds = [VgpuLedger.from_node(n, CFG, table)[0] for n in nodes]
    cache = ScanCache()
    p = pod("p0", vgpu_limits(1, 2000))
    r, _ = vgpu_request(p, CFG)
    assert r is not None
    cache.node_fit(leds[0], r, 1)
    assert cache.kept_fit(leds[3], r, 1) == leds[3].fit(r, 1)
    f = leds[3].fit(r, 1)
    leds[3].add_pod(p.uid, r.group_key, leds[3].segments(r, f.picks))
    assert cache.kept_fit(leds[3], r, 1) is None  # changed since the scan
    assert cache.kept_fit(leds[4], r, 1) == leds[4].fit(r, 1)  # unchanged
    cache.node_fit(leds[0], r, 1)  # brings node 0 up to date, not node 3
    assert cache.kept_fit(leds[3], r, 1) is None
    cache.node_fit(leds[3], r, 1)
    assert cache.kept_fit(leds[3], r, 1) == leds[3].fit(r, 1) != f


@settings(max_examples=60, deadline=None)
@given(node_specs, st.lists(container, min_size=1, max_size=2), st.integers(0, 2), st.data())
def test_card_segments_are_the_segments_of_the_picks(specs, conts, policy, data) -> None:
    """The commit's segments built from a fit's cards are those built through its picks."""
    from scheduler.plugins.deviceshare.vgpu import ScanCache

    nodes = build(specs)
    table = VgpuTable()
    leds = [VgpuLedger.from_node(n, CFG, table)[0] for n in nodes]
    p = pod("p", *[vgpu_limits(n, m, c, pc) for n, m, pc, c in conts])
    r, err = vgpu_request(p, CFG)
    assert r is not None, err
    cache = ScanCache()
    cache.answers(table, r, policy)
    for led in leds:
        f = led.fit(r, policy)
        kept = cache.kept_segments(led, r, policy)
        if f.ok and led.mig is None:
            assert kept == led.segments(r, f.picks)
        elif not f.ok:
            assert kept is None


@settings(max_examples=100, deadline=None)
@given(node_specs, container, st.integers(0, 2), st.sampled_from(["", "ns/g1"]), st.data())
def test_charging_one_card_directly_equals_charging_its_segments(specs, cont, policy, group, data) -> None:
    """VgpuLedger.charge_one (the commit of the usual one-card pod) leaves the ledger and the
    table's group holdings as add_pod of the same card's segments does, and returns the
    `vgpu-ids-new` value and usage those segments give."""
    from scheduler.plugins.deviceshare.vgpu import usage_of_segments

    _, mem, pct, cores = cont  # one card whatever the strategy draws
    p = pod("p", vgpu_limits(1, mem, cores, pct))
    r, err = vgpu_request(p, CFG)
    assert r is not None, err
    plain = [i for i, spec in enumerate(specs) if not spec[3]]  # the nodes without MIG cards
    if not plain:
        return
    at = data.draw(st.sampled_from(plain), label="node")
    sides = []
    for direct in (True, False):
        table = VgpuTable()
        led = [VgpuLedger.from_node(nd, CFG, table)[0] for nd in build(specs)][at]
        assert led.clean and led.mig is None
        f = led.fit(r, policy)
        if not f.ok:
            return
        c = f.picks[0][0].card
        if direct:
            written = led.charge_one(p.uid, group, r.containers[0], c)
        else:
            segs = led.card_segments(r, [c])
            led.add_pod(p.uid, group, segs)
            written = (ann.encode_pod_devices(segs), usage_of_segments(segs))
        sides.append((written, led.state(), led.version, table.group_cards, list(table.node_ver)))
    assert sides[0] == sides[1]


def test_a_ledger_whose_cards_share_a_uuid_is_not_charged_directly() -> None:
    """Two cards under one UUID (which the registration decoder refuses) read back as the same
    card, as does a UUID holding an annotation separator: such a ledger is not `clean`, and the
    plugin commits its pods through their segments."""
    for uuids in (["GPU-dup", "GPU-dup"], ["GPU-a", "GPU-b:c"]):
        regs = [ann.RegisteredCard(u, 4, 16384, T4, True, "hami-core") for u in uuids]
        assert not VgpuLedger("n0", regs, CFG, VgpuTable()).clean
    regs = [ann.RegisteredCard(f"GPU-{c}", 4, 16384, T4, True, "hami-core") for c in range(2)]
    assert VgpuLedger("n1", regs, CFG, VgpuTable()).clean

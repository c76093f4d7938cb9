"""commit_one, the usual one-card pod's whole commit in one call, gives exactly what its Python
twin gives (native/gpufit.pyx vs fit.py), and what the steps it replaces give: charge_kept, the
pod recorded as VgpuLedger.took_one records it, the bind annotations in their wire order."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import hotpath
from scheduler.plugins.deviceshare.vgpu import _Charge

native = hotpath.native_module()


@st.composite
def commits(draw: st.DrawFn) -> dict:
    """A table of a few nodes, a one-card request, and the pod's group, holders and annotations."""
    n_nodes = draw(st.integers(1, 4))
    starts = [0]
    for _ in range(n_nodes):
        starts.append(starts[-1] + draw(st.integers(1, 4)))
    n = starts[-1]
    devmem = [draw(st.sampled_from([0, 1000, 4096, 16384])) for _ in range(n)]
    group_name = draw(st.sampled_from(["", "job-a", "job-b"]))
    annotations = {ann.GROUP_NAME: group_name} if group_name else {}
    if draw(st.booleans()):
        annotations[ann.GROUP_NAME_VOLCANO] = "job-v"
    return {
        "starts": starts,
        "node_flags": [draw(st.sampled_from([0, 0, 0, 1])) for _ in range(n_nodes)],
        "count": [draw(st.integers(0, 4)) for _ in range(n)],
        "devmem": devmem,
        "used_num": [draw(st.integers(0, 3)) for _ in range(n)],
        "used_mem": [draw(st.integers(0, dm)) for dm in devmem],
        "used_cores": [draw(st.sampled_from([0, 10, 50, 100])) for _ in range(n)],
        "usable": [draw(st.sampled_from([0, 1, 1])) for _ in range(n)],
        "req": [
            1,
            draw(st.sampled_from([0, 100, 2000])),
            draw(st.sampled_from([101, 101, 0, 25, 100])),
            draw(st.sampled_from([0, 0, 25, 100])),
        ],
        "policy": draw(st.integers(0, 2)),
        "node": draw(st.integers(0, n_nodes - 1)),
        "stale": draw(st.booleans()),
        "annotations": annotations,
        # the group already holds some card of the table (another pod of the job)
        "held": draw(st.sampled_from([None, 0, n - 1])),
        "bind": draw(st.sampled_from([{}, {"other": "x"}, {ann.BIND_TIME: "1"}])),
    }


def _state(p: dict) -> tuple:
    ints = {k: array("q", p[k]) for k in ("starts", "node_flags", "count", "devmem", "used_num", "used_mem")}
    ints["used_cores"] = array("q", p["used_cores"])
    n = len(p["node_flags"])
    code, score, cards = array("q", [-1] * n), array("d", [0.0] * n), array("q", [-1] * n)
    python_fit.fit_nodes(
        ints["starts"], ints["node_flags"], ints["count"], ints["devmem"], ints["used_num"], ints["used_mem"],
        ints["used_cores"], array("q", p["usable"]), array("q", p["req"]), p["policy"], 0, n, code, score, cards,
    )  # fmt: skip
    node_ver, fitted = array("q", [3] * n), array("q", [3] * n)
    if p["stale"]:
        node_ver[p["node"]] += 1
    group_cards: dict[str, dict[int, int]] = {}
    if p["held"] is not None:
        group_cards["ml/job-a"] = {p["held"]: 2}
    return ints, code, cards, node_ver, fitted, group_cards


def run_commit(mod, p: dict) -> tuple:
    """commit_one on node `node`'s kept answer: its answer and everything it may have changed."""
    ints, code, cards, node_ver, fitted, group_cards = _state(p)
    i = p["node"]
    pods: dict = {}
    usage: dict = {}
    bind = dict(p["bind"])
    uuids = [f"GPU-{c}" for c in range(ints["starts"][i + 1] - ints["starts"][i])]
    _, mem, pct, cores = p["req"]
    got = mod.commit_one(
        code, fitted, cards, 1, ints["node_flags"], node_ver, ints["devmem"], ints["used_num"],
        ints["used_mem"], ints["used_cores"], i, ints["starts"][i], mem, pct, cores, pods, "uid-1",
        "ml", p["annotations"], group_cards, uuids, _Charge, bind, "node-1", "1700000000", usage,
    )  # fmt: skip
    arrays = [list(ints[k]) for k in ("used_num", "used_mem", "used_cores")]
    return got, arrays, list(node_ver), pods, group_cards, usage, list(bind.items())


def run_steps(p: dict) -> tuple:
    """The steps commit_one replaces, as the plugin took them: charge_kept, took_one's record of
    the pod, _annotate_vgpu's annotations and kept usage."""
    ints, code, cards, node_ver, fitted, group_cards = _state(p)
    i = p["node"]
    pods: dict = {}
    usage: dict = {}
    bind = dict(p["bind"])
    base = ints["starts"][i]
    uuids = [f"GPU-{c}" for c in range(ints["starts"][i + 1] - base)]
    _, mem, pct, cores = p["req"]
    got = python_fit.charge_kept(
        code, fitted, cards, 1, ints["node_flags"], node_ver, ints["devmem"], ints["used_num"],
        ints["used_mem"], ints["used_cores"], i, base, mem, pct, cores,
    )  # fmt: skip
    ids = None
    if got is not None:
        c, demand = got
        group = ann.pod_group_key("ml", p["annotations"])
        if group and (demand or cores):
            held = group_cards.setdefault(group, {})
            held[base + c] = held.get(base + c, 0) + 1
        pods["uid-1"] = (group, [_Charge(c, demand, cores, None)])
        ids = f"{uuids[c]},{ann.VGPU_REQUEST_TYPE},{demand},{cores}:"
        usage["uid-1"] = (ids, (demand, cores))
        for k, v in zip(
            ann.VGPU_POD_KEYS,
            ("node-1", "1700000000", ids, ids, ann.BIND_PHASE_ALLOCATING, "1700000000"),
            strict=True,
        ):
            bind[k] = v
    arrays = [list(ints[k]) for k in ("used_num", "used_mem", "used_cores")]
    return ids, arrays, list(node_ver), pods, group_cards, usage, list(bind.items())


@settings(max_examples=300, deadline=None)
@given(commits())
def test_commit_one_is_the_steps_it_replaces(p: dict) -> None:
    want = run_steps(p)
    assert run_commit(python_fit, p) == want
    if native is not None:
        got = run_commit(native, p)
        assert got == want
        # the compiled charge is a _Charge like the twin's, every field set
        for _, charges in got[3].values():
            assert all(type(ch) is _Charge for ch in charges)

"""The predicate of one node for a plain vGPU request (the usual ask of a placement: the node the
last pod took) reads the shared scan brought up to date at that node; its answers are the fit's."""

from __future__ import annotations

import copy

from dshelpers import cards, pod, task, vgpu_limits, vgpu_node
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.session import Session
from scheduler.model.snapshot import Snapshot
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare.plugin import VGPU_ERROR
from scheduler.registry import parse

CONF = (
    "actions: allocate\ntiers:\n- plugins:\n  - name: deviceshare\n    arguments:\n"
    "      deviceshare.VGPUEnable: true\n"
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 3), st.sampled_from([4000, 16384])), min_size=1, max_size=5),
    st.lists(st.tuples(st.sampled_from([1000, 3000, 9000]), st.integers(0, 4)), min_size=1, max_size=12),
)
def test_one_node_answers_are_the_fit(specs, pods) -> None:
    nodes = {f"n{i}": vgpu_node(f"n{i}", cards(n, devmem=mem, count=2)) for i, (n, mem) in enumerate(specs)}
    ssn = Session(Snapshot(nodes=nodes), parse(CONF))
    plugin = DeviceSharePlugin(ssn.conf.tiers[0].plugins[0].arguments)
    plugin.on_session_open(ssn)
    session_nodes = list(ssn.node_list)
    for k, (mem, at) in enumerate(pods):
        t = task(pod(f"p{k}", vgpu_limits(1, mem)))
        req = plugin.requests_of(t).vgpu
        assert req is not None
        for node in session_nodes:
            # the session's node object, then a copy the session did not open with (found by name)
            for asked in (node, copy.copy(node)):
                got = plugin.predicate(t, asked)
                f = node.devices["hamivgpu"].fit(req, plugin._policy)
                assert (got is None) == f.ok
                assert got is None or got.reason == f"{VGPU_ERROR}: {f.reason}"
        target = session_nodes[at % len(session_nodes)]
        led = target.devices["hamivgpu"]
        f = led.fit(req, plugin._policy)
        if f.ok:  # the next pod's asks find this node changed
            led.add_pod(t.uid, req.group_key, led.segments(req, f.picks))

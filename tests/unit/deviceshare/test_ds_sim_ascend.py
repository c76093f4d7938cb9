"""The sandbox's Ascend side: generated nodes register as HAMi's Ascend plugin does, the scheduler
places pods on them, and the simulated plugin accepts exactly the annotations it wrote (and fails a
pod whose annotations are incomplete or inconsistent, as the real plugin would)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from scheduler import registry
from scheduler.framework.session import SessionOptions
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.registry import parse
from scheduler.sim.deviceplugins import check_pod
from scheduler.sim.nodegen import NodeSpecError, device_configmap, make_nodes, parse_node_spec
from scheduler.sim.simulate import simulate
from tests import builders as b


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.PLUGINS, "deviceshare", DeviceSharePlugin)


CONF = b.tiers(
    "enqueue, allocate",
    ["priority", "gang", "conformance"],
    ["predicates", "deviceshare"],
    args={
        "deviceshare": {
            "deviceshare.AscendHAMiVNPUEnable": True,
            "deviceshare.SchedulePolicy": "binpack",
            "deviceshare.ScheduleWeight": 10,
        }
    },
)


def npu_pod(
    name: str,
    word: str,
    chips: int | None = 1,
    memory: int | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    limits = {}
    if chips is not None:
        limits[f"huawei.com/{word}"] = str(chips)
    if memory is not None:
        limits[f"huawei.com/{word}-memory"] = str(memory)
    return b.pod(name, cpu="1", limits=limits, annotations=annotations)


def test_node_spec_parses_npus_and_refuses_bad_ones() -> None:
    s = parse_node_spec("2:npu=8xAscend310P,vnpu-core=true")
    assert (s.count, s.npus, s.npu_chip, s.vnpu_core) == (2, 8, "Ascend310P", True)
    for bad in (
        "1:npu=8xAscend999",
        "1:npu=eight",
        "1:npu=8xAscend310P,vnpu-core=maybe",
        "1:npu=2xAscend310P,gpu=1xT4",
    ):
        with pytest.raises(NodeSpecError):
            parse_node_spec(bad)


def test_generated_npu_nodes_register_like_the_hami_plugin() -> None:
    node = make_nodes([parse_node_spec("1:npu=8xAscend910B3")])[0]
    md, alloc = node["metadata"], node["status"]["allocatable"]
    chips = json.loads(md["annotations"]["hami.io/node-register-Ascend910B3"])
    assert len(chips) == 8 and {c["count"] for c in chips} == {65536 // 16384}
    assert [c["custominfo"]["NetworkID"] for c in chips] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert md["annotations"]["hami-vnpu-core"] == "false"
    assert md["annotations"]["hami.io/node-handshake-Ascend910B3"].startswith("Reported_")
    assert alloc["huawei.com/Ascend910B3"] == "32"
    assert "Ascend910B3" in {c["commonWord"] for c in _vnpus()}


def _vnpus() -> list[dict[str, Any]]:
    import yaml

    return yaml.safe_load(device_configmap()["data"]["device-config.yaml"])["vnpus"]


def test_scheduler_and_simulated_plugin_agree_end_to_end() -> None:
    nodes = make_nodes(
        [parse_node_spec("2:npu=2xAscend310P"), parse_node_spec("1:npu=8xAscend910B3,prefix=b3")]
    )
    pods = [npu_pod(f"small-{i}", "Ascend310P", memory=2000) for i in range(3)]
    pods += [npu_pod("whole", "Ascend310P"), npu_pod("four", "Ascend910B3", chips=4)]
    objects = [device_configmap(), b.queue("default"), *nodes, *pods]
    out = simulate(
        copy.deepcopy(objects), parse(CONF), cycles=1, seed=0, options=SessionOptions(deterministic=True)
    )
    assert len(out.bindings) == 5, out.pending
    by_name = {n["metadata"]["name"]: n for n in nodes}
    # binpack: the three small pods share one chip (3 x vir01 of 7 slots)
    small_chips = {
        out.annotations[f"c1/small-{i}"]["hami.io/Ascend310P-devices-allocated"].split(",")[0]
        for i in range(3)
    }
    assert len(small_chips) == 1
    four = out.annotations["c1/four"]["hami.io/Ascend910B3-devices-allocated"]
    assert len(ann.decode_generic_devices(four)[0]) == 4
    for p in pods:
        key = f"c1/{p['metadata']['name']}"
        bound = copy.deepcopy(p)
        bound["metadata"]["annotations"].update(out.annotations[key])
        bound["spec"]["nodeName"] = out.bindings[key]
        got = check_pod(bound, by_name[out.bindings[key]])
        assert got.error == "", got.error
        assert got.annotations[ann.HAMI_BIND_PHASE] == "success"
        # a pod on the wrong node, or with its runtime info missing, is failed by the plugin
        word = "Ascend910B3" if key == "c1/four" else "Ascend310P"
        others = [
            n
            for name, n in by_name.items()
            if name != out.bindings[key] and ann.ascend_register_key(word) in n["metadata"]["annotations"]
        ]
        for other in others:
            assert "not assigned to this node" in check_pod(bound, other).error
        broken = copy.deepcopy(bound)
        broken["metadata"]["annotations"].pop(
            next(k for k in broken["metadata"]["annotations"] if k.startswith("huawei.com/"))
        )
        assert "does not name the allocated chips" in check_pod(broken, by_name[out.bindings[key]]).error


def test_pods_without_npus_are_not_checked_by_the_ascend_plugin() -> None:
    node = make_nodes([parse_node_spec("1:npu=2xAscend310P")])[0]
    assert check_pod(b.pod("cpu-only"), node).error == ""


def test_ascend_memory_and_cores_are_left_out_of_resource_accounting_like_volcano() -> None:
    from scheduler.model.convert import pod_to_task

    limits = {
        "huawei.com/Ascend310P": "1",
        "huawei.com/Ascend310P-memory": "2048",
        "huawei.com/Ascend310P-core": "2",
        ann.VGPU_MEMORY: "1000",
    }
    t = pod_to_task(b.pod("p", cpu="1", limits=limits))
    assert set(t.resreq.scalars) == {"huawei.com/Ascend310P", ann.VGPU_MEMORY}
    # the plugin still reads them from the container limits
    assert t.pod.containers[0].limits["huawei.com/Ascend310P-memory"] == "2048"


def test_garbled_registration_is_a_warning_and_the_node_does_not_fit() -> None:
    # upstream lets the pod through to a node it cannot allocate on (the plugin then fails it)
    nodes = make_nodes(
        [parse_node_spec("1:npu=1xAscend310P,prefix=bad"), parse_node_spec("1:npu=1xAscend310P")]
    )
    nodes[0]["metadata"]["annotations"]["hami.io/node-register-Ascend310P"] = '[{"id":"x","count":"7"}]'
    objects = [b.queue("default"), *nodes, npu_pod("p", "Ascend310P", memory=1000)]
    out = simulate(objects, parse(CONF), cycles=1, seed=0, options=SessionOptions(deterministic=True))
    assert out.bindings == {"c1/p": "npu-node-1"}
    assert any(
        "node bad-0: Ascend310P: Ascend registration entry 'x': count '7' is not an integer" in w
        for w in out.warnings
    ), out.warnings
    # with only the garbled node, the pod stays pending and says why
    out = simulate(
        [b.queue("default"), nodes[0], npu_pod("q", "Ascend310P")],
        parse(CONF),
        cycles=1,
        seed=0,
        options=SessionOptions(deterministic=True),
    )
    assert out.bindings == {} and "count '7' is not an integer" in out.pending["c1/q"]


def test_ascend_state_is_rebuilt_from_annotations_in_the_next_cycle() -> None:
    nodes = make_nodes([parse_node_spec("1:npu=1xAscend310P")])
    objects = [b.queue("default"), *nodes, npu_pod("whole", "Ascend310P")]
    first = simulate(objects, parse(CONF), cycles=1, seed=0, options=SessionOptions(deterministic=True))
    assert first.bindings == {"c1/whole": "npu-node-0"}
    # the next cycle sees the bound pod only through its annotations: the chip is full
    objects.append(npu_pod("late", "Ascend310P", memory=1000))
    out = simulate(objects, parse(CONF), cycles=2, seed=0, options=SessionOptions(deterministic=True))
    assert "c1/late" not in out.bindings
    assert "no enough ascend device available on node npu-node-0" in out.pending["c1/late"]


def test_a_pod_using_two_chip_kinds_takes_the_shared_node_lock_once() -> None:
    a, c = make_nodes([parse_node_spec("1:npu=1xAscend310P"), parse_node_spec("1:npu=1xAscend910B3")])
    a["metadata"]["annotations"].update(c["metadata"]["annotations"])
    for k in ("capacity", "allocatable"):
        a["status"][k].update(c["status"][k])
    p = npu_pod("two", "Ascend310P")
    p["spec"]["containers"][0]["resources"]["limits"]["huawei.com/Ascend910B3"] = "1"
    conf = b.tiers(
        "enqueue, allocate",
        ["predicates", "deviceshare"],
        args={"deviceshare": {"deviceshare.AscendHAMiVNPUEnable": True, "deviceshare.NodeLockEnable": True}},
    )
    out = simulate(
        [device_configmap(), b.queue("default"), a, p],
        parse(conf),
        cycles=1,
        seed=0,
        options=SessionOptions(deterministic=True),
    )
    assert out.bindings == {"c1/two": "npu-node-0"}, out.pending
    got = out.annotations["c1/two"]
    assert "hami.io/Ascend310P-devices-allocated" in got and "hami.io/Ascend910B3-devices-allocated" in got
    assert [k for _, k, _ in out.cycles[0].node_locks] == [ann.LOCK_HAMI]

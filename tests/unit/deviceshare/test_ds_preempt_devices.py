"""Device-aware preempt and reclaim through the real actions (spec 6.3, issue #6 item 5): the
victims evicted free devices the preemptor really fits on — memory, cores, whole cards, MIG
slices, Ascend chips — and the preemptor is pipelined onto exactly the freed devices."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from scheduler import registry
from scheduler.framework.session import SessionOptions
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import DeviceShareArgs
from scheduler.registry import parse
from scheduler.sim.simulate import SimulationResult, simulate
from tests import builders as b

T4_REG = "GPU-a,10,16384,NVIDIA-Tesla T4,true,hami-core:GPU-b,10,16384,NVIDIA-Tesla T4,true,hami-core:"
A100_REG = "GPU-m,10,81920,NVIDIA-A100-SXM4-80GB,true,mig:"
GEOMETRY = """
nvidia:
  knownMigGeometries:
  - models: ["A100-SXM4-80GB"]
    allowedGeometries:
    - group: group1
      geometries: [{name: 1g.10gb, memory: 9728, count: 7}]
    - group: group3
      geometries: [{name: 3g.40gb, memory: 40192, count: 2}]
"""


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.PLUGINS, "deviceshare", DeviceSharePlugin)


def run(objects: list[dict[str, Any]], args: dict[str, Any], actions: str = "preempt") -> SimulationResult:
    conf = b.tiers(
        actions,
        ["conformance", "gang", "priority", "predicates", "deviceshare", "proportion"],
        args={"deviceshare": args},
    )
    return simulate(
        copy.deepcopy(objects), parse(conf), cycles=1, seed=0, options=SessionOptions(deterministic=True)
    )


def vgpu_node(name: str, reg: str, cards: int) -> dict[str, Any]:
    extra = {
        ann.VGPU_NUMBER: str(10 * cards),
        ann.VGPU_MEMORY: str(16384 * cards),
        ann.VGPU_CORES: str(100 * cards),
    }
    return b.node(name, cpu="32", memory="64Gi", extra=extra, annotations={ann.VGPU_REGISTER: reg})


def running(name: str, group: str, node: str, ids: str, limits: dict[str, str], **kw: Any) -> dict[str, Any]:
    a = {ann.VGPU_NODE: node, ann.VGPU_IDS_NEW: ids, ann.BIND_PHASE: "success", **kw.pop("annotations", {})}
    return b.pod(
        name, cpu="1", group=group, node_name=node, phase="Running", limits=limits, annotations=a, **kw
    )


def vgpu(number: int = 1, memory: int | None = None, cores: int | None = None) -> dict[str, str]:
    out = {ann.VGPU_NUMBER: str(number)}
    if memory is not None:
        out[ann.VGPU_MEMORY] = str(memory)
    if cores is not None:
        out[ann.VGPU_CORES] = str(cores)
    return out


def base(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b.priority_class("low", 10),
        b.priority_class("high", 100),
        b.queue("q1"),
        b.podgroup("low", 1, queue="q1", priority_class="low", phase="Running"),
        b.podgroup("high", 1, queue="q1", priority_class="high"),
        # a non-preemptable member keeps gang from protecting the low job's other pods
        b.pod(
            "keeper",
            cpu="1",
            group="low",
            node_name="n",
            phase="Running",
            annotations={"volcano.sh/preemptable": "false"},
        ),
        *extra,
    ]


def pipelined_annotations(out: SimulationResult, key: str) -> dict[str, str]:
    """The annotations a pipelined preemptor carries (it is bound, with them, in a later cycle)."""
    ns, name = key.split("/")
    for job in out.cycles[0].jobs.values():
        for t in job.tasks.values():
            if t.namespace == ns and t.name == name:
                return t.bind_annotations
    raise KeyError(key)


def chosen_cards(out: SimulationResult, key: str) -> list[str]:
    ids = pipelined_annotations(out, key)[ann.VGPU_IDS_NEW]
    return [e.uuid for seg in ann.decode_pod_devices(ids) for e in seg]


VGPU = {"deviceshare.VGPUEnable": True}


def test_memory_preemptor_lands_on_the_card_its_victim_freed() -> None:
    # card a: 12000 MiB held by a low pod; card b: 10000 MiB held by a non-preemptable pod
    objects = base(
        vgpu_node("n", T4_REG, 2),
        running("victim", "low", "n", "GPU-a,NVIDIA,12000,0:", vgpu(1, 12000)),
        running(
            "pinned",
            "low",
            "n",
            "GPU-b,NVIDIA,10000,0:",
            vgpu(1, 10000),
            annotations={"volcano.sh/preemptable": "false"},
        ),
        b.pod("hi", cpu="1", group="high", limits=vgpu(1, 14000)),
    )
    out = run(objects, VGPU)
    assert out.evictions == ["c1/victim"]
    assert out.pipelined == {"c1/hi": "n"}
    assert chosen_cards(out, "c1/hi") == ["GPU-a"]


def test_exclusive_cores_evict_everything_on_one_card_and_nothing_more() -> None:
    # the preemptor wants a whole card (cores 100): card b also has a pinned pod, so only card a
    # can be emptied; its two sharers must both go, and the pod on card b must stay
    objects = base(
        vgpu_node("n", T4_REG, 2),
        running("a1", "low", "n", "GPU-a,NVIDIA,1000,10:", vgpu(1, 1000, 10)),
        running("a2", "low", "n", "GPU-a,NVIDIA,1000,10:", vgpu(1, 1000, 10)),
        running(
            "pinned",
            "low",
            "n",
            "GPU-b,NVIDIA,1000,10:",
            vgpu(1, 1000, 10),
            annotations={"volcano.sh/preemptable": "false"},
        ),
        b.pod("hi", cpu="1", group="high", limits=vgpu(1, 1000, 100)),
    )
    out = run(objects, VGPU)
    assert sorted(out.evictions) == ["c1/a1", "c1/a2"]
    assert chosen_cards(out, "c1/hi") == ["GPU-a"]


def test_no_eviction_when_freeing_every_victim_still_leaves_the_devices_short() -> None:
    # two cards are asked for; one card is pinned: evicting the other card's pod cannot help
    objects = base(
        vgpu_node("n", T4_REG, 2),
        running("victim", "low", "n", "GPU-a,NVIDIA,16000,0:", vgpu(1, 16000)),
        running(
            "pinned",
            "low",
            "n",
            "GPU-b,NVIDIA,16000,0:",
            vgpu(1, 16000),
            annotations={"volcano.sh/preemptable": "false"},
        ),
        b.pod("hi", cpu="1", group="high", limits=vgpu(2, 8000)),
    )
    out = run(objects, VGPU)
    assert out.evictions == [] and out.pipelined == {}


def test_mig_preemptor_gets_the_slice_its_victim_freed() -> None:
    # group3 (2 x 3g.40gb) is in use: one slice by a victim, one pinned; a 30000 MiB request
    # fits only in the victim's slice once it is gone
    objects = base(
        b.node(
            "n",
            cpu="32",
            memory="64Gi",
            extra={ann.VGPU_NUMBER: "10", ann.VGPU_MEMORY: "81920", ann.VGPU_CORES: "100"},
            annotations={ann.VGPU_REGISTER: A100_REG},
        ),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "volcano-vgpu-device-config", "namespace": "kube-system"},
            "data": {"device-config.yaml": GEOMETRY},
        },
        running("victim", "low", "n", "GPU-m[group3-0],NVIDIA,30000,0:", vgpu(1, 30000)),
        running(
            "pinned",
            "low",
            "n",
            "GPU-m[group3-1],NVIDIA,30000,0:",
            vgpu(1, 30000),
            annotations={"volcano.sh/preemptable": "false"},
        ),
        b.pod("hi", cpu="1", group="high", limits=vgpu(1, 30000)),
    )
    out = run(objects, VGPU)
    assert out.evictions == ["c1/victim"]
    assert chosen_cards(out, "c1/hi") == ["GPU-m[group3-0]"]


def test_reclaim_frees_a_card_across_queues() -> None:
    objects = [
        b.queue("q1", weight=1),
        b.queue("q2", weight=1),
        vgpu_node("n", "GPU-a,10,16384,NVIDIA-Tesla T4,true,hami-core:", 1),
        b.podgroup("greedy", 1, queue="q1", phase="Running"),
        b.podgroup("starved", 1, queue="q2"),
        running("hog", "greedy", "n", "GPU-a,NVIDIA,16000,0:", vgpu(1, 16000)),
        running("hog2", "greedy", "n", "", {}, annotations={}),
        b.pod("want", cpu="1", group="starved", limits=vgpu(1, 8000)),
    ]
    out = run(objects, VGPU, actions="reclaim")
    assert out.evictions == ["c1/hog"]
    assert chosen_cards(out, "c1/want") == ["GPU-a"]


def test_ascend_preemptor_gets_the_chip_its_victim_freed() -> None:
    word = "Ascend310P"
    reg = ann.encode_ascend_register(
        [ann.AscendCard(f"npu-{i}", 7, 21527, 8, word, True, -1, i) for i in range(2)]
    )
    held = {
        "hami.io/Ascend310P-devices-allocated": "npu-{i},Ascend310P,21527,0:;",
        ann.HAMI_BIND_PHASE: "success",
    }

    def npu_pod(name: str, i: int, **kw: Any) -> dict[str, Any]:
        a = {k: v.format(i=i) for k, v in held.items()} | kw.pop("annotations", {})
        return b.pod(
            name,
            cpu="1",
            group="low",
            node_name="n",
            phase="Running",
            limits={"huawei.com/Ascend310P": "1"},
            annotations=a,
            **kw,
        )

    objects = base(
        b.node(
            "n",
            cpu="32",
            memory="64Gi",
            extra={"huawei.com/Ascend310P": "14"},
            annotations={ann.ascend_register_key(word): reg},
        ),
        npu_pod("victim", 0),
        npu_pod("pinned", 1, annotations={"volcano.sh/preemptable": "false"}),
        b.pod("hi", cpu="1", group="high", limits={"huawei.com/Ascend310P": "1"}),
    )
    out = run(objects, {"deviceshare.AscendHAMiVNPUEnable": True})
    assert out.evictions == ["c1/victim"]
    got = pipelined_annotations(out, "c1/hi")
    assert got["hami.io/Ascend310P-devices-allocated"] == "npu-0,Ascend310P,21527,0:;"
    assert got["huawei.com/Ascend310P"] == '[{"UUID":"npu-0"}]'


def test_a_victim_on_a_card_that_cannot_be_emptied_is_given_back() -> None:
    # Volcano evicts in victim order until the preemptor fits, so b1 (whose card keeps a pinned
    # sharer and can never be emptied) would go for nothing; we give such device holders back
    objects = base(
        vgpu_node("n", T4_REG, 2),
        # listed first, so victim order (reverse of task order) puts b1 first
        running("a1", "low", "n", "GPU-a,NVIDIA,1000,10:", vgpu(1, 1000, 10)),
        running("b1", "low", "n", "GPU-b,NVIDIA,1000,10:", vgpu(1, 1000, 10)),
        running(
            "pinned",
            "low",
            "n",
            "GPU-b,NVIDIA,1000,10:",
            vgpu(1, 1000, 10),
            annotations={"volcano.sh/preemptable": "false"},
        ),
        b.pod("hi", cpu="1", group="high", limits=vgpu(1, 1000, 100)),
    )
    out = run(objects, VGPU)
    assert chosen_cards(out, "c1/hi") == ["GPU-a"]
    assert out.evictions == ["c1/a1"]


# -- GPU exclusivity rules (spec 6.7) ------------------------------------------------------------------
def exclusive_objects(new_labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        b.queue("q1"),
        vgpu_node("n", T4_REG, 2),
        b.podgroup("old", 1, queue="q1", phase="Running"),
        b.podgroup("new", 1, queue="q1"),
        running(
            "trainer",
            "old",
            "n",
            "GPU-a,NVIDIA,2000,0:",
            vgpu(1, 2000),
            labels={"app": "train", "team": "ml"},
        ),
        b.pod("next", cpu="1", group="new", limits=vgpu(1, 2000), labels=new_labels),
    ]


@pytest.mark.parametrize(
    ("labels", "card"),
    [
        ({"app": "train", "team": "ml"}, "GPU-b"),  # same rule: the trainer's card is closed
        ({"app": "train", "team": "ml", "x": "y"}, "GPU-b"),  # extra labels still match
        ({"app": "train"}, "GPU-a"),  # misses a label of the rule: shares as usual (binpack)
        ({}, "GPU-a"),
    ],
)
def test_exclusivity_rule_keeps_same_rule_pods_on_separate_gpus(labels: dict[str, str], card: str) -> None:
    args = {
        **VGPU,
        "deviceshare.SchedulePolicy": "binpack",
        "deviceshare.ScheduleWeight": 1,
        "deviceshare.GPUExclusiveRules": [{"app": "train", "team": "ml"}, {"workload": "infer"}],
    }
    out = run(exclusive_objects(labels), args, actions="allocate")
    assert out.bindings == {"c1/next": "n"}
    assert [
        e.uuid for s in ann.decode_pod_devices(out.annotations["c1/next"][ann.VGPU_IDS_NEW]) for e in s
    ] == [card]


def test_exclusivity_rule_leaves_a_pod_pending_when_every_gpu_is_taken_by_its_rule() -> None:
    objects = exclusive_objects({"app": "train", "team": "ml"})
    objects.append(
        running(
            "trainer2",
            "old",
            "n",
            "GPU-b,NVIDIA,2000,0:",
            vgpu(1, 2000),
            labels={"app": "train", "team": "ml"},
        )
    )
    args = {**VGPU, "deviceshare.GPUExclusiveRules": [{"app": "train", "team": "ml"}]}
    out = run(objects, args, actions="allocate")
    assert out.bindings == {} and "not enough gpu fitted" in out.pending["c1/next"]
    # without the rule the same pod shares a card
    assert run(objects, VGPU, actions="allocate").bindings == {"c1/next": "n"}


@pytest.mark.parametrize("bad", ["train", [{"app": 1}], [{}], [["app", "train"]]])
def test_unreadable_exclusivity_rules_load_with_a_warning_and_no_rule(bad: Any) -> None:
    # Volcano accepts these and drops what it cannot read (TestParseExclusiveRulesHandlesEdgeCases)
    text = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: deviceshare\n    arguments:\n'
        "      deviceshare.VGPUEnable: true\n"
        f"      deviceshare.GPUExclusiveRules: {json.dumps(bad)}\n"
    )
    conf = parse(text)
    assert any("deviceshare.GPUExclusiveRules" in w for w in conf.warnings), conf.warnings
    assert DeviceShareArgs.parse(conf.tiers[0].plugins[0].arguments).exclusive_rules == ()


def test_an_exclusivity_rule_keeps_its_string_labels_and_drops_the_others() -> None:
    from scheduler.framework.arguments import Arguments

    args = DeviceShareArgs.parse(
        Arguments({"deviceshare.GPUExclusiveRules": [{}, {"app": "train", "replicas": 2}]})
    )
    assert args.exclusive_rules == ((("app", "train"),),)
    assert len(args.warnings) == 2


def test_pod_using_vgpu_and_ascend_rolls_back_both_when_the_ascend_lock_is_held() -> None:
    # spec 6.1: kinds are allocated in order; a later kind failing releases the earlier ones
    word = "Ascend310P"
    reg = ann.encode_ascend_register([ann.AscendCard("npu-0", 7, 21527, 8, word, True, -1, 0)])
    node = vgpu_node("n", T4_REG, 2)
    node["metadata"]["annotations"].update(
        {ann.ascend_register_key(word): reg, ann.LOCK_HAMI: "2999-01-01T00:00:00Z"}
    )
    for k in ("capacity", "allocatable"):
        node["status"][k]["huawei.com/Ascend310P"] = "7"
    both = {**vgpu(1, 1000), "huawei.com/Ascend310P": "1"}
    objects = [
        b.queue("q1"),
        node,
        b.podgroup("pg", 1, queue="q1"),
        b.pod("both", cpu="1", group="pg", limits=both),
    ]
    args = {**VGPU, "deviceshare.AscendHAMiVNPUEnable": True, "deviceshare.NodeLockEnable": True}
    out = run(objects, args, actions="allocate")
    assert (
        out.bindings == {}
        and "has been locked within 5 minutes (hami.io/mutex.lock)" in out.pending["c1/both"]
    )
    assert out.cycles[0].node_locks == []  # the vGPU lock intent taken first was withdrawn
    # without the lock both kinds are allocated, each with its own annotations and lock
    node["metadata"]["annotations"].pop(ann.LOCK_HAMI)
    out = run(objects, args, actions="allocate")
    got = out.annotations["c1/both"]
    assert (
        got[ann.VGPU_IDS_NEW].startswith("GPU-")
        and got["hami.io/Ascend310P-devices-allocated"] == "npu-0,Ascend310P,21527,0:;"
    )
    assert sorted(k for _, k, _ in out.cycles[0].node_locks) == sorted([ann.LOCK_VGPU, ann.LOCK_HAMI])

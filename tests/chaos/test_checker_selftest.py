"""The referee's self-test: each rule broken by hand, to prove the check fires (and stays quiet
when the rule holds)."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.sim.apiserver.store import Store
from tests.builders import node
from tests.chaos.checker import Checker
from tests.chaos.harness import valid_pod

REGISTER = "GPU-a,2,1000,NVIDIA-T4,true,hami-core:"


def setup(cpu: str = "2") -> tuple[Store, Checker]:
    store = Store()
    gpu = node("g", cpu="8", memory="16Gi", annotations={"volcano.sh/node-vgpu-register": REGISTER})
    for n in (node("n1", cpu=cpu, memory="16Gi"), gpu):
        store.create(n)
    return store, Checker(store, lambda p: "valid" in p["metadata"]["name"])


def bind(store: Store, name: str, node_name: str, annotations: dict[str, str] | None = None) -> None:
    binding: dict[str, Any] = {"metadata": {"name": name}, "target": {"kind": "Node", "name": node_name}}
    if annotations:
        binding["metadata"]["annotations"] = annotations
    store.bind("default", name, binding)


def test_quiet_when_every_rule_holds() -> None:
    store, ch = setup()
    for i in range(2):
        store.create(valid_pod(f"valid-{i}", cpu="1"))
        bind(store, f"valid-{i}", "n1")
    assert ch.binds == 2 and ch.finish() == []


def test_a_pod_bound_twice_is_caught() -> None:
    store, ch = setup()
    store.create(valid_pod("p", cpu="1"))
    bind(store, "p", "n1")
    moved = copy.deepcopy(store.get("pods", "default", "p"))
    moved["spec"]["nodeName"] = "g"  # the store itself refuses a second Binding: forge the event
    ch.observe("MODIFIED", moved)
    assert any("bound twice" in v for v in ch.violations)


def test_an_over_committed_node_is_caught_at_the_event() -> None:
    store, ch = setup(cpu="1")
    for i in range(2):
        store.create(valid_pod(f"p{i}", cpu="750m"))
        bind(store, f"p{i}", "n1")
    assert any("node n1 over-committed in ['cpu']" in v for v in ch.violations)


def test_an_over_committed_card_is_caught() -> None:
    store, ch = setup()
    for i in range(2):
        store.create(valid_pod(f"v{i}", cpu="100m", limits={"volcano.sh/vgpu-number": "1"}))
        bind(store, f"v{i}", "g", {"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,600,30:"})
    assert any("card GPU-a on g over-committed" in v and "1200/1000 MiB" in v for v in ch.violations)


def test_a_kubelet_rejection_is_caught() -> None:
    store, ch = setup()
    store.create(valid_pod("p", cpu="100m"))
    bind(store, "p", "n1")
    store.patch(
        "pods",
        "default",
        "p",
        {"status": {"phase": "Failed", "reason": "OutOfcpu"}},
        "merge",
        subresource="status",
    )
    assert ch.rejections == 1 and any("kubelet rejected default/p" in v for v in ch.violations)


def test_a_valid_pod_left_unbound_while_it_fits_is_caught() -> None:
    store, ch = setup()
    store.create(valid_pod("valid-late", cpu="1"))
    store.create(valid_pod("too-big-valid", cpu="64"))  # fits nowhere: not a violation
    store.create(valid_pod("garbage", cpu="1"))  # not valid for this run: not a violation
    assert ch.finish() == ["pod default/valid-late left unbound though it fits g"]


def test_a_daemon_that_exited_is_caught() -> None:
    _store, ch = setup()
    assert ch.finish(daemons_alive=False) == ["a scheduler daemon exited"]

"""Volcano's pkg/scheduler/api/devices/nvidia/gpushare tests (device_info_test.go, share_test.go) that
check one function, case by case: test ids are the upstream case names, expected values the Go
test's. The fit case of share_test.go is the scenario dev-predicategpubymemory-oversubscribedcardnotoffered.
"""

from __future__ import annotations

import pytest
from dshelpers import pod, share_node, task

from scheduler.framework.arguments import Arguments
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.gpushare import KIND, GpuShareLedger
from scheduler.plugins.deviceshare.requests import pod_gpu_amount

CONTAINERS_ONLY = ([1, 3], [], 4)
WITH_INIT = ([2], [1, 3], 3)


@pytest.mark.parametrize(
    "resource", [ann.GPU_MEMORY, ann.GPU_NUMBER], ids=["TestGetGPUMemoryOfPod", "TestGetGPUNumberOfPod"]
)
@pytest.mark.parametrize(
    ("containers", "init", "want"),
    [
        pytest.param(*CONTAINERS_ONLY, id="GPUs required only in Containers"),
        pytest.param(*WITH_INIT, id="GPUs required both in initContainers and Containers"),
    ],
)
def test_get_gpu_amount_of_pod(resource: str, containers: list[int], init: list[int], want: int) -> None:
    p = pod("p", *[{resource: str(n)} for n in containers], init=[{resource: str(n)} for n in init])
    assert pod_gpu_amount(p, resource) == (want, "")


def oversubscribed() -> GpuShareLedger:
    led = GpuShareLedger.from_node(share_node("n1", memory="1000", number="1"))
    assert led is not None
    led.add_pod("p1", 3000, "Running", [0])
    return led


def test_get_devices_idle_gpu_memory_over_subscribed_card_reports_zero() -> None:
    assert oversubscribed().cards[0].free == 0


def test_release_returns_removed_annotation_keys() -> None:
    node = share_node("node-a", memory="1000", number="1")
    led = GpuShareLedger.from_node(node)
    assert led is not None
    t = task(pod("worker-0", {ann.GPU_MEMORY: "100"}, uid="pod-uid"))
    led.add_pod(t.uid, 100, "Pending", [0])
    node.devices[KIND] = led
    t.bind_annotations = {ann.PREDICATE_TIME: "1700000000", ann.GPU_INDEX: "0"}
    DeviceSharePlugin(Arguments({"deviceshare.GPUSharingEnable": True}))._release(t, node)
    assert t.uid not in led.pod_cards and t.uid not in led.cards[0].pods
    assert ann.GPU_INDEX not in t.bind_annotations
    assert ann.PREDICATE_TIME not in t.bind_annotations

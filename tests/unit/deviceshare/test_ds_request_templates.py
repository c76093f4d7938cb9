"""A pod's device requests read from its template's parse are the ones its own parse gives.

The plugin parses once per pod template (pods sharing their container lists, as convert interns
them) and gives each pod the vGPU group keys of its own group name. Whatever the order in which
pods of shared and separate templates arrive, every pod's requests equal a fresh parse of it.
"""

from __future__ import annotations

import random
from dataclasses import fields

import pytest

from scheduler.framework.arguments import Arguments
from scheduler.model.objects import Container, PodInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import DEFAULT_VNPU
from scheduler.plugins.deviceshare.plugin import DeviceSharePlugin, PodDeviceRequests
from scheduler.plugins.deviceshare.requests import VgpuRequest
from tests.unit.deviceshare.dshelpers import task

ARGS = {"deviceshare.VGPUEnable": True, "deviceshare.AscendHAMiVNPUEnable": True}
# gpushare cannot be on with vGPU
SHARE_ARGS = {"deviceshare.GPUSharingEnable": True, "deviceshare.AscendHAMiVNPUEnable": True}

LIMITS = [
    {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "2048", ann.VGPU_CORES: "25"},
    {ann.VGPU_NUMBER: "2", ann.VGPU_MEMORY: "4096"},
    {ann.VGPU_MEMORY: "1024"},
    {ann.VGPU_NUMBER: "1", ann.VGPU_CORES: "250"},  # impossible: an error, kept per template too
    {ann.GPU_MEMORY: "1024"},
    {DEFAULT_VNPU.resource_name: "1", DEFAULT_VNPU.resource_memory_name: "3072"},
    {"cpu": "1"},
]

ANNOTATIONS = [
    {},
    {ann.VGPU_PODGROUP_POLICY: "spread"},
    {ann.VGPU_USE_UUID: "GPU-0,GPU-1"},
    {ann.VGPU_MODE: "mig"},
    {ann.VGPU_MODE: "bogus"},
]

GROUPS = [None, "g1", "g2"]


def _pods(seed: int) -> list[PodInfo]:
    """Pods over a few shared container lists (templates) and a few separate equal ones, with
    random group names (of either annotation), other annotations, namespaces and node names."""
    rng = random.Random(seed)
    templates = [[Container("main", dict(lim), dict(lim))] for lim in LIMITS]
    out = []
    for i in range(120):
        k = rng.randrange(len(LIMITS))
        # a separate but equal list now and then: another template with the same content
        containers = (
            templates[k] if rng.random() < 0.8 else [Container("main", dict(LIMITS[k]), dict(LIMITS[k]))]
        )
        anns = dict(rng.choice(ANNOTATIONS))
        group = rng.choice(GROUPS)
        if group is not None:
            anns[rng.choice((ann.GROUP_NAME, ann.GROUP_NAME_VOLCANO))] = group
        out.append(
            PodInfo(
                uid=f"uid-{i}",
                name=f"p{i}",
                namespace=rng.choice(("a", "b")),
                annotations=anns,
                node_name=rng.choice(("", "", "n1")),
                containers=containers,
            )
        )
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("args", [ARGS, SHARE_ARGS], ids=["vgpu", "gpushare"])
def test_template_requests_equal_a_fresh_parse(seed: int, args: dict[str, bool]) -> None:
    plugin = DeviceSharePlugin(Arguments(args))
    fresh = DeviceSharePlugin(Arguments(args))
    kinds = set()
    for p in _pods(seed):
        got: PodDeviceRequests = plugin.requests_of(task(p))
        want = fresh._parse(p)
        assert got == want, p
        kinds.add((got.vgpu is not None, bool(got.vgpu_error), got.share is not None, bool(got.ascend)))
    # the cases the pods were drawn for all came up
    wanted = {(False, False, False, True), (False, False, False, False)}
    if args is ARGS:
        wanted |= {(True, False, False, False), (False, True, False, False)}
    else:
        wanted.add((False, False, True, False))
    assert wanted <= kinds


def test_group_keys_are_the_pods_own() -> None:
    plugin = DeviceSharePlugin(Arguments(ARGS))
    containers = [Container("main", dict(LIMITS[0]), dict(LIMITS[0]))]
    keys = []
    for i, group in enumerate(("g1", "g2", "g1")):
        anns = {ann.GROUP_NAME: group, ann.VGPU_PODGROUP_POLICY: "spread"}
        p = PodInfo(uid=f"u{i}", name=f"p{i}", namespace="ns", annotations=anns, containers=containers)
        req = plugin.requests_of(task(p)).vgpu
        assert req is not None
        keys.append((req.group_key, req.spread_group))
    assert keys == [("ns/g1", "ns/g1"), ("ns/g2", "ns/g2"), ("ns/g1", "ns/g1")]


def test_regrouping_copies_every_field() -> None:
    """_regrouped builds the requests field by field: a field added to either class must be
    copied there too (this list is the reminder)."""
    assert [f.name for f in fields(PodDeviceRequests)] == [
        "share", "share_error", "vgpu", "vgpu_error", "gpu_types", "ascend", "ascend_error",
    ]  # fmt: skip
    assert [f.name for f in fields(VgpuRequest)] == [
        "containers", "n_containers", "mode", "use_uuids", "nouse_uuids", "use_types", "nouse_types",
        "spread_group", "group_key",
    ]  # fmt: skip

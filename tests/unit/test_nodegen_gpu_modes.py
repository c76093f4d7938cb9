"""Generated GPU nodes: the standard NVIDIA device plugin mode, AMD GPUs, and the model list."""

from __future__ import annotations

import pytest

from scheduler.sim.nodegen import GPU_MODELS, NodeSpecError, make_nodes, parse_node_spec


def test_nvidia_mode_registers_whole_gpus_with_feature_discovery_labels() -> None:
    (node,) = make_nodes([parse_node_spec("1:gpu=4xH200,mode=nvidia")])
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert not [k for k in node["status"]["allocatable"] if k.startswith("volcano.sh/")]
    assert not node["metadata"]["annotations"]  # no HAMi registration
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert (labels["nvidia.com/gpu.count"], labels["nvidia.com/gpu.family"]) == ("4", "hopper")
    assert labels["nvidia.com/gpu.memory"] == str(GPU_MODELS["H200"][0])
    (t4,) = make_nodes([parse_node_spec("1:gpu=1xT4,mode=nvidia")])
    assert t4["metadata"]["labels"]["nvidia.com/gpu.product"] == "Tesla-T4"  # NVML's name, as GFD writes it


@pytest.mark.parametrize("model", ["L4", "L40S", "A10", "H200", "B200"])
def test_new_nvidia_models_work_with_hami(model: str) -> None:
    (node,) = make_nodes([parse_node_spec(f"1:gpu=2x{model}")])
    assert node["status"]["allocatable"]["volcano.sh/vgpu-memory"] == str(2 * GPU_MODELS[model][0])
    assert "volcano.sh/node-vgpu-register" in node["metadata"]["annotations"]


def test_mi300x_is_a_whole_amd_gpu_and_takes_no_mode() -> None:
    (node,) = make_nodes([parse_node_spec("1:gpu=8xMI300X")])
    assert node["status"]["allocatable"]["amd.com/gpu"] == "8"
    assert node["metadata"]["labels"]["amd.com/gpu.product-name"] == "AMD_Instinct_MI300X"
    with pytest.raises(NodeSpecError, match="AMD GPU"):
        parse_node_spec("1:gpu=8xMI300X,mode=hami-core")


def test_an_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(NodeSpecError) as exc:
        parse_node_spec("1:gpu=8xRTX4090")
    assert "unknown GPU model 'RTX4090'" in str(exc.value)
    for model in ("A100-80GB", "L4", "L40S", "A10", "H200", "B200", "MI300X"):
        assert model in str(exc.value)


def test_each_node_has_its_own_address_and_pod_cidr() -> None:
    nodes = make_nodes([parse_node_spec("300")])
    cidrs = {n["spec"]["podCIDR"] for n in nodes}
    ips = {n["status"]["addresses"][0]["address"] for n in nodes}
    assert len(cidrs) == len(ips) == 300

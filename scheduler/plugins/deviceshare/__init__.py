"""deviceshare: shared accelerators (GPU sharing by memory/number, HAMi vGPU incl. MIG and MPS).

`DeviceSharePlugin` is the plugin; `annotations` holds every wire key and codec (also used by the
sandbox's simulated device plugins); `bench.run_device_bench` measures the vGPU hot path.
"""

from scheduler.plugins.deviceshare.plugin import DeviceSharePlugin

__all__ = ["DeviceSharePlugin"]

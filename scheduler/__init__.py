"""vc-scheduler: a Volcano-compatible batch scheduler for Kubernetes."""

from scheduler.__version__ import __version__

__all__ = ["__version__"]

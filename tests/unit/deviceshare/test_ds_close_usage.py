"""The session's close charges vGPU tasks the memory and cores their `vgpu-ids-new` names: read
from the segments the annotation was written from when decoding gives them back, and the same
figures as decoding it."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.cycle import run_session_keep
from scheduler.framework.session import SessionOptions
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import vgpu
from scheduler.registry import parse
from scheduler.sim.devicebench import SESSION_CONF, _session_state

text = st.text(alphabet="GPU-0123abc,:; NVIDIA", max_size=8)
amount = st.one_of(st.integers(-3, 70000), st.just(ann.REGISTER_INT_MAX + 1), st.just(2048.0))
entry = st.builds(ann.DeviceEntry, text, amount, amount, text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(entry, max_size=3), max_size=3))
def test_segments_give_what_decoding_their_annotation_gives(segments: list) -> None:
    got = vgpu.usage_of_segments(segments)
    if got is not None:
        encoded = ann.encode_pod_devices(segments)
        assert got == vgpu.vgpu_usage_of({ann.VGPU_IDS_NEW: encoded})


def test_ordinary_segments_are_read_directly() -> None:
    segs = [[ann.DeviceEntry("GPU-1", 2048, 10, "NVIDIA")], [], [ann.DeviceEntry("GPU-2", 1024, 0, "NVIDIA")]]
    assert vgpu.usage_of_segments(segs) == (3072, 10)


def _closed(monkeypatch: pytest.MonkeyPatch, direct: bool) -> list:
    if not direct:
        monkeypatch.setattr(vgpu, "usage_of_segments", lambda segments: None)
    state = _session_state(60, 4, 120, 5)
    _, ssn = run_session_keep(state.snapshot(), parse(SESSION_CONF), SessionOptions(), rng=random.Random(5))
    monkeypatch.undo()
    return [
        (job.uid, dict(job.allocated.scalars), [(t.uid, dict(t.resreq.scalars)) for t in job.tasks.values()])
        for job in ssn.jobs.values()
    ]


def test_close_charges_the_same_without_the_kept_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    direct = _closed(monkeypatch, True)
    decoded = _closed(monkeypatch, False)
    assert direct == decoded
    # the close really charged memory: some task holds a vGPU memory amount
    assert any(any(r for _, r in tasks) for _, _, tasks in direct)

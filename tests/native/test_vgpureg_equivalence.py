"""The compiled vGPU register decoder gives exactly the answers of its Python twin
(native/vgpureg.pyx vs annotations.decode_vgpu_register): the same cards for every registration,
and the same error text for every malformed one, on random, spliced and hand-made strings.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import hotpath

native = hotpath.native_register_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.vgpureg is not built")

MAX = ann.REGISTER_INT_MAX
# what a field may hold: the separators, blanks str.strip() removes (ASCII and not), digits
# int() reads but the decoder must not ("٣"), letters whose lower() is special ("İ"), and the
# health words in every case
ODD = ":, \t\n\x0b\x1c\x1f\x7f\x85\xa0\u2003٣İéGPU-0123456789tTrRuUeEfalsFALS"
odd_text = st.text(alphabet=ODD, max_size=12)
numbers = st.one_of(
    st.integers(min_value=0, max_value=MAX + 2),
    st.sampled_from((0, 1, 10, MAX - 1, MAX, MAX + 1, 10**10 - 1, 10**10, 10**11)),
)
healths = st.sampled_from(("true", "false", "True", "TRUE", "t", "T", "1", "0", "f", "tru", "truee", ""))
printable = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=16)


@st.composite
def fields(draw: Any) -> list[str]:
    """One entry's fields: mostly well formed, each one now and then padded or garbled."""
    f = [
        draw(st.one_of(st.just(""), st.text(alphabet="GPU-abcdef0123456789", min_size=1, max_size=12))),
        str(draw(numbers)),
        str(draw(numbers)),
        draw(st.sampled_from(("NVIDIA-A100-SXM4-40GB", "NVIDIA Tesla T4", "", "Other"))),
        draw(healths),
        draw(st.sampled_from((*ann.VGPU_MODES, "", "other"))),
    ]
    for i in draw(st.lists(st.integers(min_value=0, max_value=5), max_size=2)):
        how = draw(st.integers(min_value=0, max_value=3))
        if how == 0:
            f[i] = f" {f[i]}\t"
        elif how == 1:
            f[i] = draw(odd_text)
        elif how == 2:
            f[i] = draw(printable)
        else:
            f[i] = f[i] + draw(odd_text)
    # an entry of fewer or more fields than six
    extra = draw(st.integers(min_value=-3, max_value=2))
    return f[: 6 + extra] if extra < 0 else f + [draw(odd_text) for _ in range(extra)]


@st.composite
def registrations(draw: Any) -> str:
    entries = [",".join(draw(fields())) for _ in range(draw(st.integers(min_value=0, max_value=5)))]
    if draw(st.booleans()) and entries:  # a card listed twice
        entries.append(draw(st.sampled_from(entries)))
    sep = draw(st.sampled_from((":", ":", ":", ":\n", "::")))
    tail = draw(st.sampled_from((sep, "", sep + "junk", sep + " ")))
    return sep.join(entries) + tail


@st.composite
def spliced(draw: Any) -> str:
    """A registration the device plugin could have written, with a few characters changed."""
    cards = [
        ann.RegisteredCard(
            f"GPU-{i}-{draw(st.integers(min_value=0, max_value=9))}",
            draw(numbers),
            draw(numbers),
            draw(st.sampled_from(("NVIDIA-A100-SXM4-40GB", "NVIDIA-T4"))),
            draw(st.booleans()),
            draw(st.sampled_from(ann.VGPU_MODES)),
        )
        for i in range(draw(st.integers(min_value=1, max_value=8)))
    ]
    s = ann.encode_vgpu_register(cards)
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        at = draw(st.integers(min_value=0, max_value=len(s)))
        cut = draw(st.integers(min_value=0, max_value=2))
        s = s[:at] + draw(odd_text) + s[at + cut :]
    return s


HAND_MADE = [
    "",
    ":",
    "no colon, at all,x,y,z",
    "GPU-0,10,16384,NVIDIA-T4:",  # four fields
    "GPU-0,10,16384,NVIDIA-T4,true:",  # five
    "GPU-0,10,16384,NVIDIA-T4,true,hami-core:",
    "GPU-0,10,16384,NVIDIA-T4,true,hami-core,extra,more:",
    "GPU-0,10,16384,NVIDIA-T4,true,hami-core",  # no ':' at the end: still an entry
    "GPU-0,10,16384,NVIDIA-T4,true,hami-core:GPU-0,10,16384,NVIDIA-T4,true,hami-core:",
    ",10,16384,NVIDIA-T4,true,hami-core:,10,16384,NVIDIA-T4,true,hami-core:",  # empty ids twice
    f"GPU-0,{MAX},{MAX},NVIDIA-T4,TRUE,mig:",
    f"GPU-0,{MAX + 1},1,NVIDIA-T4,true,hami-core:",
    "GPU-0,0010,0000016384,NVIDIA-T4,T,mps:",
    "GPU-0,12345678901,1,NVIDIA-T4,true,hami-core:",
    "GPU-0,,1,NVIDIA-T4,true,hami-core:",
    "GPU-0,-1,1,NVIDIA-T4,true,hami-core:",
    "GPU-0,٣,1,NVIDIA-T4,true,hami-core:",
    " GPU-0 , 10 ,16384, NVIDIA T4 , true , hami-core :",
    "GPU-0\xa0,10,16384,NVIDIA-T4,true,hami-core:",
    "GPU-0,10,16384,NVIDIA-T4,\x85true,hami-core:",
    "GPU-0,10,16384,NVIDIA-T4,İ,hami-core:",
    "GPU-0,10,16384,NVIDIA-T4,true,hami core:",
    "GPU-é,10,16384,NVIDIA-T4,true,hami-core:",
    "GPU-0,10,16384,NVIDIA-T\x7f4,true,hami-core:",
    "GPU-0,10,16384,NVIDIA-T4,true,:",
    "junk:GPU-0,10,16384,NVIDIA-T4,true,hami-core::",
]


def _same(value: str | None) -> None:
    assert native is not None
    assert native.decode_vgpu_register(value) == ann.decode_vgpu_register(value), repr(value)


def test_compiled_module_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, (
            "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.vgpureg did not import"
        )
        assert hotpath.register_impl is native or os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0")
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


@needs_native
@pytest.mark.parametrize("value", [None, *HAND_MADE])
def test_hand_made_registrations_decode_alike(value: str | None) -> None:
    _same(value)


@needs_native
@settings(max_examples=600, deadline=None)
@given(registrations())
@example("GPU-0,10,1,T,true,hami-core:GPU-1,10,1,T,true,hami-core:")
def test_random_registrations_decode_alike(value: str) -> None:
    _same(value)


@needs_native
@settings(max_examples=600, deadline=None)
@given(spliced())
def test_spliced_registrations_decode_alike(value: str) -> None:
    _same(value)


@needs_native
def test_plugin_written_registrations_are_decoded_without_the_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled decoder must decide the device plugin's own form itself (the twin is only
    its answer for the rest): were it to hand every string over, it would be no faster."""
    assert native is not None
    cards = [
        ann.RegisteredCard(f"GPU-{i}", 10, 40960, "NVIDIA-A100-SXM4-40GB", i % 3 != 0, ann.MODE_HAMI_CORE)
        for i in range(8)
    ]
    value = ann.encode_vgpu_register(cards)
    expected = ann.decode_vgpu_register(value)

    def twin_called(value: str | None) -> Any:
        raise AssertionError("the compiled decoder asked the twin")

    monkeypatch.setattr(ann, "decode_vgpu_register", twin_called)
    got = native.decode_vgpu_register(value)
    assert got == expected and got[0] == cards
    assert [type(c) for c in got[0]] == [ann.RegisteredCard] * 8
    with pytest.raises(AttributeError):  # still the frozen dataclass
        got[0][0].count = 1  # type: ignore[misc]

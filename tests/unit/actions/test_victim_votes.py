"""How the plugins' victim votes combine (Volcano's Session.Preemptable/Reclaimable): within a tier
the votes intersect; an empty result is no decision, so a later plugin or the next tier decides."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from scheduler.framework.session import ABSTAIN, Session
from scheduler.model.snapshot import Snapshot
from scheduler.registry import parse
from tests.builders import tiers

CONF = tiers("preempt", ["priority", "gang", "conformance"], ["drf"])
VOTE = 1


def _task(uid: str) -> Any:
    return SimpleNamespace(uid=uid)


def _session(votes: dict[str, list[str] | None]) -> tuple[Session, list[Any]]:
    """A session whose plugins vote as given (None: abstain) on the candidates a, b, c."""
    ssn = Session(Snapshot(), parse(CONF))
    for plugin, uids in votes.items():

        def fn(_asker: Any, cands: list[Any], uids: list[str] | None = uids) -> tuple[list[Any], int]:
            if uids is None:
                return [], ABSTAIN
            return [t for t in cands if t.uid in uids], VOTE

        ssn.add_preemptable_fn(plugin, fn)
    ssn.finish_registration()
    return ssn, [_task("a"), _task("b"), _task("c")]


def _victims(votes: dict[str, list[str] | None]) -> list[str]:
    ssn, cands = _session(votes)
    return sorted(t.uid for t in ssn.preemptable(_task("p"), cands))


def test_votes_of_one_tier_intersect() -> None:
    assert _victims({"priority": ["a", "b"], "gang": ["b", "c"]}) == ["b"]


def test_an_empty_intersection_lets_the_next_plugin_of_the_tier_decide() -> None:
    # priority and gang share no victim; conformance's vote then stands on its own, as in Volcano
    assert _victims({"priority": ["a"], "gang": ["b"], "conformance": ["a", "c"]}) == ["a", "c"]


def test_a_tier_without_a_decision_hands_over_to_the_next_tier() -> None:
    assert _victims({"priority": ["a"], "gang": ["b"], "drf": ["c"]}) == ["c"]
    assert _victims({"priority": [], "drf": ["b"]}) == ["b"]


def test_no_victims_when_no_tier_decides() -> None:
    assert _victims({"priority": None, "gang": [], "drf": []}) == []

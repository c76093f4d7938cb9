"""conformance's preemption vote, checked against Volcano's TestConformancePlugin: a pod of
kube-system is never a victim, a pod of any other namespace may be."""

from __future__ import annotations

from tests.unit.plugins.plugin_world import World, tier


def test_conformance_plugin() -> None:
    w = World()
    w.node("test-node")
    system = w.pod("test-pod", ns="kube-system", on="test-node")
    other = w.pod("test-pod", ns="test-namespace", on="test-node")
    w.pod("preemptor", ns="test-namespace")
    ssn = w.session(tier("conformance"))
    preemptor = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "preemptor")
    victims = ssn.preemptable(
        preemptor, [ssn.jobs[system.job].tasks[system.uid], ssn.jobs[other.job].tasks[other.uid]]
    )
    assert [(t.namespace, t.name) for t in victims] == [("test-namespace", "test-pod")]

"""FitErrors keeps its message between calls (a session's close words a misfit up to three
times), and words it again whenever what it is built from changed."""

from __future__ import annotations

from scheduler.framework.fiterrors import FitErrors


def test_the_kept_message_follows_every_change() -> None:
    fe = FitErrors()
    assert fe.message() == "all nodes are unavailable"
    fe.set_node_error("n1", "Insufficient cpu")
    fe.set_node_error("n2", ["Insufficient cpu", "Insufficient memory"])
    first = fe.message()
    assert first == "0/2 nodes are unavailable: 1 Insufficient memory, 2 Insufficient cpu."
    assert fe.message() is first  # kept, not worded again
    fe.set_node_error("n1", "node(s) were unschedulable")  # same count of nodes, other reason
    assert fe.message() == (
        "0/2 nodes are unavailable: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable."
    )
    fe.nodes["n3"] = ["Too many pods"]  # in place, one more node: the length tells
    assert fe.message().startswith("0/3 nodes are unavailable:")
    fe.nodes["n3"] = ["Insufficient cpu"]  # in place, same length: the writer says so
    fe.forget()
    assert "2 Insufficient cpu" in fe.message()
    fe.nodes = {"n9": ["Too many pods"]}  # another dict
    assert fe.message() == "0/1 nodes are unavailable: 1 Too many pods."
    fe.hypernode = "h1"
    assert fe.message() == "In hyperNode h1: 0/1 nodes are unavailable: 1 Too many pods."
    empty = FitErrors()
    empty.set_error("gang unschedulable")
    assert empty.message() == "gang unschedulable"
    empty.set_error("other")
    assert empty.message() == "other"
    assert str(empty) == "other"

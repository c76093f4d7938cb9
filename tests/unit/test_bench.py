"""`vc-scheduler bench` at a tiny scale: it decides every pod and rewrites only its own section."""

from __future__ import annotations

from pathlib import Path

from scheduler.sim.bench import main


def test_bench_writes_its_section_and_keeps_the_others(tmp_path: Path, capsys) -> None:
    out = tmp_path / "performance.md"
    out.write_text(
        "# Performance\n\n## Decision core (`vc-scheduler bench`)\n\nold figures\n\n## Other section\n\nkept\n",
        encoding="utf-8",
    )
    argv = ["--nodes", "40", "--pods", "200", "--running", "400", "--idle-rounds", "2", "--output", str(out)]
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "old figures" not in text
    assert text.endswith("MB\n\n## Other section\n\nkept\n")
    section = text.split("## Decision core")[1].split("## Other section")[0]
    assert "| pods bound | 200 in" in section  # 40 nodes of 32 CPU hold the whole backlog
    assert "vc-scheduler bench --nodes 40 --pods 200" in section
    assert "actions: enqueue, allocate, backfill" in section
    assert "not measured at that scale" in section  # goals are judged at 5,000 nodes only
    # the idle period is measured quiet and with running pods replaced before each round
    assert "| total per period with 100 running pods replaced before it" in section
    err = capsys.readouterr().err
    assert "pods bound" in err and "idle round 2/2" in err


def test_queue_tree_bench_compares_capacity_with_proportion_in_its_own_section(tmp_path: Path) -> None:
    out = tmp_path / "performance.md"
    out.write_text(
        "# Performance\n\n## Decision core (`vc-scheduler bench`)\n\nkept figures\n", encoding="utf-8"
    )
    argv = ["--nodes", "30", "--pods", "150", "--queues", "9", "--queue-levels", "3", "--running", "300"]
    assert main([*argv, "--idle-rounds", "1", "--quiet", "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "kept figures" in text
    section = text.split("## Decision core with capacity and hierarchical queues")[1]
    assert "| backlog: pods bound | 150 in" in section  # both runs decide the whole backlog
    assert "capacity, queue tree | proportion, flat queues" in section
    assert (
        "backlog pods/s, proportion / capacity" in section and "idle period, capacity / proportion" in section
    )


def test_queue_tree_has_the_levels_and_leaves_asked_for() -> None:
    from scheduler.model.cluster import ClusterState
    from scheduler.sim.bench import gen_queue_tree

    state = ClusterState()
    leaves = gen_queue_tree(state, 100, 3, 5000)
    assert len(leaves) == 100
    depth = {}
    for name in leaves:
        d, cur = 0, name
        while cur != "root":
            cur = state.queues[cur].parent
            d += 1
        depth[name] = d
    assert set(depth.values()) == {3}
    total = sum(state.queues[q].deserved.milli_cpu for q in leaves if state.queues[q].deserved)
    assert abs(total - 5000 * 32 * 1000) < 100  # the leaves share the whole cluster

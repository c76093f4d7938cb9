"""The scaling curve: the decision core (and optionally the daemon) at growing cluster sizes.

    python -m scheduler.sim.curve [--sizes 1000,5000,10000,20000] [--pods-per-node 30]
        [--daemon] [--output docs/performance.md] [--plot docs/images/scaling.svg]

Every size runs in a fresh child process, so its peak RSS is its own and one size's heap never
slows the next. The job mix is `bench`'s at every size: pending gang jobs of 10 pods (a third of
the per-node pods) for decisions/s, and `--pods-per-node` running pods per node for the idle
period. With `--daemon`, `daemonbench` runs too (restart → first bind, idle session in the
daemon, the daemon's peak RSS). The growth factor per doubling of nodes is reported for the idle
period and the decision rate, so cost per node rising with size is visible at a glance.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scheduler.sim.report import load_average, load_sentence, replace_section

SECTION = "## Scaling curve (`python -m scheduler.sim.curve`)"
GANG = 10
QUEUES = 4


def measure_core(nodes: int, pods_per_node: int, idle_rounds: int) -> dict[str, Any]:
    """One size, in this process: the backlog's decisions/s and the idle period."""
    from scheduler.registry import default_configuration
    from scheduler.sim.bench import bench_backlog, bench_idle, peak_rss_mb

    conf = default_configuration()
    pending = max(GANG, (pods_per_node // 3) * nodes)
    backlog = bench_backlog(nodes, pending, GANG, QUEUES, conf, 200, progress=False)
    idle = bench_idle(nodes, pods_per_node * nodes, QUEUES, conf, idle_rounds, progress=False)
    return {
        "nodes": nodes,
        "pending": backlog["pods"],
        "running": idle["running"],
        "pods_per_s": backlog["pods_per_s_sessions"],
        "sampled": backlog["sampled"],
        "idle_ms": idle["total_ms_median"],
        "idle_snapshot_ms": idle["snapshot_ms_median"],
        "idle_session_ms": idle["session_ms_median"],
        "core_peak_rss_mb": peak_rss_mb(),
    }


def _child(args: list[str], timeout: float) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(
    nodes: int, pods_per_node: int, idle_rounds: int, daemon: bool, timeout: float, restarts: int = 1
) -> dict[str, Any]:
    row = _child(
        ["scheduler.sim.curve", "--one", str(nodes), "--pods-per-node", str(pods_per_node),
         "--idle-rounds", str(idle_rounds)],
        timeout,
    )  # fmt: skip
    if daemon:
        d = _child(
            ["scheduler.sim.daemonbench", "--nodes", str(nodes), "--running", str(pods_per_node * nodes),
             "--pending", str(nodes), "--burst", "0", "--arrival-rate", "0", "--restarts", str(restarts),
             "--json"],
            timeout,
        )  # fmt: skip
        row["restart_to_first_bind_s"] = d.get("restart_to_first_bind_seconds")
        row["restart_runs"] = d.get("restart_to_first_bind_runs")
        row["daemon_idle_ms"] = d.get("idle_session_ms")
        row["daemon_peak_rss_mb"] = d.get("daemon_peak_rss_mb")
    return row


def growth_per_doubling(rows: list[dict[str, Any]], key: str) -> float | None:
    """The factor `key` grows by when the nodes double, fitted over the first and last size."""
    pts = [(r["nodes"], r[key]) for r in rows if r.get(key)]
    if len(pts) < 2 or pts[0][0] == pts[-1][0]:
        return None
    (n0, v0), (n1, v1) = pts[0], pts[-1]
    return (v1 / v0) ** (1 / math.log2(n1 / n0))


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}"
    return f"{value:,}{unit}"


def render(rows: list[dict[str, Any]], command: str, load_before: str, plot: str | None) -> str:
    daemon = any("restart_to_first_bind_s" in r for r in rows)
    head = [
        "nodes",
        "running pods",
        "decisions/s",
        "nodes sampled per pod",
        "µs per sampled node",
        "idle period (ms)",
        "idle per 1,000 nodes (ms)",
        "core peak RSS (MB)",
    ]
    if daemon:
        restarts = max(len(r.get("restart_runs") or [0]) for r in rows)
        median = f", median of {restarts}" if restarts > 1 else ""
        head += [f"restart → first bind (s{median})", "daemon idle session (ms)", "daemon peak RSS (MB)"]
    lines = [
        SECTION,
        "",
        f"Command: `{command}`  ",
        load_sentence(load_before, load_average()),
        "",
        "Each size in a fresh process; the job mix of `vc-scheduler bench` (gang jobs of 10 pods in 4 queues) "
        "with the running pods spread evenly over the nodes. Decisions/s counts session time only; the idle "
        "period is snapshot + session on the full cluster with nothing to place (median). A pod's search "
        "stops after a sample of feasible nodes whose size Volcano fixes (an adaptive share of the cluster: "
        "50 % less 1 % per 125 nodes, at least 5 % and 100 nodes), so the sample doubles from 10,000 to "
        "20,000 nodes and the decision rate per pod must fall there; the cost per pod and sampled node is "
        "the figure that shows whether deciding grows more expensive with size.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---:|" * len(head),
    ]
    for r in rows:
        cells = [
            _fmt(r["nodes"]),
            _fmt(r["running"]),
            _fmt(round(r["pods_per_s"])),
            _fmt(r.get("sampled")),
            _fmt(1e6 / (r["pods_per_s"] * r["sampled"]) if r.get("sampled") else None),
            _fmt(r["idle_ms"]),
            _fmt(r["idle_ms"] * 1000 / r["nodes"]),
            _fmt(round(r["core_peak_rss_mb"])),
        ]
        if daemon:
            cells += [
                _fmt(r.get("restart_to_first_bind_s")),
                _fmt(r.get("daemon_idle_ms")),
                _fmt(r.get("daemon_peak_rss_mb")),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    runs = [(r["nodes"], r["restart_runs"]) for r in rows if r.get("restart_runs")]
    if runs:
        lines += [
            "",
            "Restart → first bind, every run (the daemon started again against the same API server, "
            "with new pending pods each time): "
            + "; ".join(f"{n:,} nodes {' / '.join(f'{x} s' for x in xs)}" for n, xs in runs)
            + ".",
        ]
    idle_g = growth_per_doubling(rows, "idle_ms")
    rate_g = growth_per_doubling(rows, "pods_per_s")
    for r in rows:
        if r.get("sampled"):
            r["us_per_sampled_node"] = 1e6 / (r["pods_per_s"] * r["sampled"])
    node_g = growth_per_doubling(rows, "us_per_sampled_node")
    lines.append("")
    if idle_g is not None and rate_g is not None:
        lines.append(
            f"Per doubling of nodes the idle period grows {idle_g:.2f}x (2.00x = cost per node constant) "
            f"and the decision rate changes {rate_g:.2f}x (1.00x = no slower per pod at larger size)"
            + (
                f"; the cost per pod and sampled node changes {node_g:.2f}x (1.00x = constant)."
                if node_g is not None
                else "."
            )
        )
    if plot:
        lines += ["", f"![scaling curve]({plot})"]
    lines.append("")
    return "\n".join(lines)


def svg_plot(rows: list[dict[str, Any]]) -> str:
    """Two panels on a log2 node axis: idle ms per 1,000 nodes, and decisions/s."""
    w, h, pad = 760, 300, 50
    panel_w = (w - 3 * pad) / 2

    def panel(x0: float, title: str, values: list[tuple[int, float]], colour: str) -> list[str]:
        if not values:
            return []
        xs = [math.log2(n) for n, _ in values]
        top = max(v for _, v in values) * 1.2 or 1.0
        lo_x, hi_x = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1

        def px(x: float) -> float:
            return x0 + (x - lo_x) / (hi_x - lo_x) * panel_w

        def py(v: float) -> float:
            return h - pad - v / top * (h - 2 * pad)

        pts = " ".join(f"{px(x):.1f},{py(v):.1f}" for x, (_, v) in zip(xs, values, strict=True))
        out = [
            f'<text x="{x0}" y="{pad - 20}" font-size="14" font-family="sans-serif">{title}</text>',
            f'<line x1="{x0}" y1="{h - pad}" x2="{x0 + panel_w}" y2="{h - pad}" stroke="#999"/>',
            f'<line x1="{x0}" y1="{pad}" x2="{x0}" y2="{h - pad}" stroke="#999"/>',
            f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>',
            f'<text x="{x0 - 5}" y="{pad + 4}" font-size="11" text-anchor="end" font-family="sans-serif">{top:,.0f}</text>',
        ]
        for x, (n, v) in zip(xs, values, strict=True):
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="3" fill="{colour}"/>')
            out.append(
                f'<text x="{px(x):.1f}" y="{h - pad + 16}" font-size="11" text-anchor="middle" '
                f'font-family="sans-serif">{n:,}</text>'
            )
            out.append(
                f'<text x="{px(x):.1f}" y="{py(v) - 8:.1f}" font-size="10" text-anchor="middle" '
                f'font-family="sans-serif">{v:,.1f}</text>'
            )
        return out

    idle = [(r["nodes"], r["idle_ms"] * 1000 / r["nodes"]) for r in rows]
    rate = [(r["nodes"], r["pods_per_s"]) for r in rows]
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        *panel(pad, "idle period per 1,000 nodes (ms)", idle, "#c0392b"),
        *panel(2 * pad + panel_w, "decisions per second", rate, "#2471a3"),
        f'<text x="{w / 2}" y="{h - 8}" font-size="12" text-anchor="middle" font-family="sans-serif">nodes</text>',
        "</svg>",
    ]
    return "\n".join(body) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.sim.curve", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,5000,10000,20000", help="node counts, comma-separated")
    p.add_argument("--pods-per-node", type=int, default=30)
    p.add_argument("--idle-rounds", type=int, default=5)
    p.add_argument("--daemon", action="store_true", help="also run daemonbench at every size")
    p.add_argument(
        "--restarts", type=int, default=1, help="with --daemon: restarts per size, the median is reported"
    )
    p.add_argument("--timeout", type=float, default=3600, help="seconds allowed per size")
    p.add_argument("--output", help="write the section into this Markdown file")
    p.add_argument("--plot", help="write the curve as an SVG image here")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child: one size, JSON on stdout
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure_core(args.one, args.pods_per_node, args.idle_rounds)))
        return 0
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        p.error(f"--sizes must be node counts separated by commas, got {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        p.error("--sizes needs at least one positive node count")
    load_before = load_average()
    rows = []
    for n in sizes:
        print(f"curve: {n:,} nodes ...", file=sys.stderr, flush=True)
        rows.append(
            measure(n, args.pods_per_node, args.idle_rounds, args.daemon, args.timeout, args.restarts)
        )
        r = rows[-1]
        print(
            f"{n:>8,} nodes: {r['pods_per_s']:>8,.0f} decisions/s, idle {r['idle_ms']:,.1f} ms, "
            f"RSS {r['core_peak_rss_mb']:,.0f} MB",
            flush=True,
        )
    command = "python -m scheduler.sim.curve " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        Path(args.plot).write_text(svg_plot(rows), encoding="utf-8")
    if args.output:
        plot_ref = None
        if args.plot:
            plot_ref = os.path.relpath(Path(args.plot).resolve(), Path(args.output).resolve().parent)
        replace_section(args.output, SECTION, render(rows, command.strip(), load_before, plot_ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Instructions per scheduling session, counted under valgrind: a figure the host's speed cannot move.

Wall-clock and CPU time on a shared 2-core machine drift by 2-3x within an hour (see
docs/performance.md), so a 5 % change cannot be seen in seconds. The number of machine
instructions a session executes does not drift: with the hash seed fixed it is the same run
after run to a few parts in a million, so two commits compare in one run each.

    vc-scheduler bench --devices --instructions [--kind vgpu|floor|ascend|all] [--sessions 2]
        [--against OTHER_CHECKOUT] [--output docs/performance.md]

runs the device bench's session (`--session-pods` one-pod jobs on `--nodes` fresh nodes x
`--gpus`; `floor`: the same jobs without device asks, tiers without deviceshare) in two child
processes under `valgrind --tool=cachegrind`: both build the cluster `1 + sessions` times and run
one warm-up session; one of them also runs a session on each later cluster. The difference of
their instruction counts divided by `sessions` is one session's instructions, without the
interpreter's start, the imports and the cluster's construction. Needs valgrind on PATH (Debian:
`apt-get install valgrind`); each child runs ~50x slower than natively (about a minute at the
defaults).

`--against DIR` counts the same sessions with the scheduler package of another checkout (a git
worktree of an older commit, built) and gives the ratio: a change's gain, measured on a host whose
speed no timing can pin down. The counted child is this file run by path, so the older checkout
needs only the device bench's session helpers, not this module.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SECTION = "## Instructions per session (`vc-scheduler bench --devices --instructions`)"

KINDS = ("vgpu", "floor", "ascend")

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


@dataclass(frozen=True)
class SessionCount:
    kind: str
    sessions: int
    pods: int
    instructions: int  # per session

    def line(self) -> str:
        return (
            f"{self.kind}: {self.instructions / 1e6:,.0f} M instructions per session "
            f"({self.instructions / max(self.pods, 1) / 1e3:,.0f} k per pod of {self.pods:,}; "
            f"difference of two valgrind runs over {self.sessions} session{'s' if self.sessions != 1 else ''})"
        )


def parse_refs(stderr: str) -> int:
    """The total instruction count cachegrind prints at exit (`I   refs:   1,234,567`)."""
    m = _REFS.search(stderr)
    if m is None:
        raise ValueError("valgrind printed no instruction count (is it cachegrind?)")
    return int(m.group(1).replace(",", ""))


def run_child(kind: str, nodes: int, gpus: int, pods: int, seed: int, sessions: int, run: bool) -> int:
    """The counted process: a warm-up session (module caches filled as after a daemon's first
    session), then `sessions` more clusters, each scheduled only with `run`. Returns bound pods."""
    from scheduler.framework.cycle import run_session
    from scheduler.framework.session import SessionOptions
    from scheduler.registry import parse
    from scheduler.sim import devicebench as db
    from scheduler.sim.report import SettledGC

    confs = {"vgpu": db.SESSION_CONF, "floor": db.FLOOR_SESSION_CONF, "ascend": db.ASCEND_SESSION_CONF}
    conf = parse(confs[kind])
    ascend, asks = kind == "ascend", kind != "floor"
    bound = 0
    for i in range(1 + sessions):
        state = db._session_state(nodes, gpus, pods, seed, ascend=ascend, device_asks=asks)
        snap = state.snapshot()
        with SettledGC():
            if i == 0 or run:
                bound = len(run_session(snap, conf, SessionOptions(), rng=random.Random(seed)).binds)
    return bound


# the directory holding this checkout's `scheduler` package (a source tree or site-packages)
OWN_ROOT = Path(__file__).resolve().parents[2]


def _counted(args: list[str], env: dict[str, str], root: Path) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RuntimeError("valgrind is not on PATH (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="vc-icount-") as tmp:
        # this file by path from a directory of its own, so that `scheduler` is imported from
        # `root` alone (run from scheduler/sim it would shadow the standard library's gc)
        script = Path(tmp) / "icount_child.py"
        shutil.copyfile(__file__, script)
        cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        cmd += [sys.executable, str(script), "--child", *args]
        done = subprocess.run(
            cmd, env={**env, "PYTHONPATH": str(root)}, cwd=root, capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        if "VC_SCHEDULER_REQUIRE_NATIVE" in done.stderr:
            raise RuntimeError(
                f"{root}: its compiled modules are not built (run `python setup.py build_ext --inplace` "
                "there), or set VC_SCHEDULER_PURE=1 to count the pure-Python twins on both sides"
            )
        raise RuntimeError(f"counted child failed ({done.returncode}) in {root}: {done.stderr[-2000:]}")
    return parse_refs(done.stderr)


def count_session(
    kind: str, nodes: int, gpus: int, pods: int, seed: int, sessions: int, root: Path = OWN_ROOT
) -> SessionCount:
    """One session's instructions with the scheduler package under `root`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if sessions < 1:
        raise ValueError("sessions must be at least 1")
    if not (root / "scheduler" / "__init__.py").is_file():
        raise ValueError(f"{root} holds no scheduler package")
    # set and dict orders follow string hashes: a fixed seed makes the count repeatable
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if env.get("VC_SCHEDULER_PURE", "") in ("", "0"):
        # an unbuilt checkout would count its pure-Python twins, ~1.6x the compiled paths' count
        env["VC_SCHEDULER_REQUIRE_NATIVE"] = "1"
    base = [kind, str(nodes), str(gpus), str(pods), str(seed), str(sessions)]
    with_runs = _counted([*base, "run"], env, root)
    without = _counted([*base, "norun"], env, root)
    return SessionCount(kind, sessions, pods, (with_runs - without) // sessions)


def _commit(root: Path) -> str:
    """The checkout's commit (and `+changes` when its tree differs), or 'unknown' outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


_WHAT = {
    "vgpu": "one-pod jobs asking one vGPU (1-8 GiB, 0-50 % cores), deviceshare under binpack",
    "floor": "the same jobs without device asks, tiers without deviceshare",
    "ascend": "one-pod jobs asking one Ascend 310P vNPU (HAMi)",
}


def render_markdown(
    cmd: str,
    rows: list[tuple[SessionCount, SessionCount | None]],
    commit: str,
    other: str | None,
    nodes: int,
    gpus: int,
) -> str:
    head = ["kind", "what the session decides", f"instructions per session ({commit})", "per pod"]
    if other is not None:
        head += [f"against {other}", "ratio"]
    lines = [
        SECTION,
        "",
        "<!-- doc-test: skip: counts under valgrind, minutes a kind, run by hand; its output is this section -->",
        "```",
        cmd,
        "```",
        "",
        f"The device bench's session ({rows[0][0].pods:,} one-pod jobs on {nodes:,} fresh nodes x {gpus}) counted "
        "in machine instructions under valgrind: the difference of two runs, one building the clusters only, "
        "divided by the counted sessions. The count does not depend on the host's speed (the hash seed is "
        "fixed), so it compares commits measured on different days; it does not weigh cache misses, so a "
        "change that saves instructions but touches more memory can still be slower in seconds "
        f"(counted {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for mine, theirs in rows:
        cells = [
            mine.kind,
            _WHAT[mine.kind],
            f"{mine.instructions / 1e6:,.0f} M",
            f"{mine.instructions / max(mine.pods, 1) / 1e3:,.0f} k",
        ]
        if theirs is not None:
            cells += [
                f"{theirs.instructions / 1e6:,.0f} M",
                f"x{mine.instructions / max(theirs.instructions, 1):.2f}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def child_main(argv: Sequence[str]) -> int:
    kind, nodes, gpus, pods, seed, sessions, mode = argv
    run_child(kind, int(nodes), int(gpus), int(pods), int(seed), int(sessions), mode == "run")
    return 0


def _hide_against(arg: str, against: Path | None, commit: str | None) -> str:
    if against is None:
        return arg
    if arg == str(against):
        return f"<checkout of {commit}>"
    if arg == f"--against={against}":
        return f"--against=<checkout of {commit}>"
    return arg


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="vc-scheduler bench --devices --instructions",
        description="Count one device-bench session's machine instructions under valgrind.",
    )
    p.add_argument(
        "--kind", choices=(*KINDS, "all"), default="vgpu", help="floor: the same jobs without device asks"
    )
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--gpus", type=int, default=8, help="GPUs (or Ascend chips) per node")
    p.add_argument("--session-pods", type=int, default=1000, help="one-pod jobs in the session")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sessions", type=int, default=2, help="counted sessions (after one warm-up)")
    p.add_argument(
        "--against", type=Path, help="another checkout's directory: count it too and give the ratio"
    )
    p.add_argument("--output", help="write the Markdown results into this file (replacing only this section)")
    args = p.parse_args(argv)
    kinds = KINDS if args.kind == "all" else (args.kind,)
    rows: list[tuple[SessionCount, SessionCount | None]] = []
    try:
        for kind in kinds:
            size = (args.nodes, args.gpus, args.session_pods, args.seed, args.sessions)
            mine = count_session(kind, *size)
            theirs = None if args.against is None else count_session(kind, *size, root=args.against.resolve())
            print(mine.line() + ("" if theirs is None else f"; against {args.against}: {theirs.line()}"))
            rows.append((mine, theirs))
    except (RuntimeError, ValueError) as exc:
        print(f"vc-scheduler bench --devices --instructions: {exc}", file=sys.stderr)
        return 2
    if args.output:
        from scheduler.sim.report import replace_section

        other = None if args.against is None else _commit(args.against.resolve())
        # the other checkout by its commit: its directory means nothing to a reader
        shown = [
            f"<checkout of {other}>" if args.against is not None and a == str(args.against) else a
            for a in argv
        ]
        cmd = "vc-scheduler bench --devices --instructions " + " ".join(shown)
        text = render_markdown(cmd.strip(), rows, _commit(OWN_ROOT), other, args.nodes, args.gpus)
        replace_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":  # pragma: no cover - the counted child, started by count_session
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child_main(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))

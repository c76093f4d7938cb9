"""Instructions per scheduling session, counted under valgrind: a figure the host's speed cannot move.

Wall-clock and CPU time on a shared 2-core machine drift by 2-3x within an hour (see
docs/performance.md), so a 5 % change cannot be seen in seconds. The number of machine
instructions a session executes does not drift: with the hash seed fixed it is the same run
after run to a few parts in a million, so two commits compare in one run each.

    vc-scheduler bench --devices --instructions [--kind vgpu|floor|ascend] [--sessions 2]

runs the device bench's session (`--session-pods` one-pod jobs on `--nodes` fresh nodes x
`--gpus`; `floor`: the same jobs without device asks, tiers without deviceshare) in two child
processes under `valgrind --tool=cachegrind`: both build the cluster `1 + sessions` times and run
one warm-up session; one of them also runs a session on each later cluster. The difference of
their instruction counts divided by `sessions` is one session's instructions, without the
interpreter's start, the imports and the cluster's construction. Needs valgrind on PATH (Debian:
`apt-get install valgrind`); each child runs ~50x slower than natively (about a minute at the
defaults).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

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


def _counted(args: list[str], env: dict[str, str]) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RuntimeError("valgrind is not on PATH (Debian: apt-get install valgrind)")
    cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    cmd += [sys.executable, "-m", "scheduler.sim.icount", "--child", *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"counted child failed ({done.returncode}): {done.stderr[-2000:]}")
    return parse_refs(done.stderr)


def count_session(kind: str, nodes: int, gpus: int, pods: int, seed: int, sessions: int) -> SessionCount:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if sessions < 1:
        raise ValueError("sessions must be at least 1")
    # set and dict orders follow string hashes: a fixed seed makes the count repeatable
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    base = [kind, str(nodes), str(gpus), str(pods), str(seed), str(sessions)]
    with_runs = _counted([*base, "run"], env)
    without = _counted([*base, "norun"], env)
    return SessionCount(kind, sessions, pods, (with_runs - without) // sessions)


def child_main(argv: Sequence[str]) -> int:
    kind, nodes, gpus, pods, seed, sessions, mode = argv
    run_child(kind, int(nodes), int(gpus), int(pods), int(seed), int(sessions), mode == "run")
    return 0


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="vc-scheduler bench --devices --instructions",
        description="Count one device-bench session's machine instructions under valgrind.",
    )
    p.add_argument("--kind", choices=KINDS, default="vgpu", help="floor: the same jobs without device asks")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--gpus", type=int, default=8, help="GPUs (or Ascend chips) per node")
    p.add_argument("--session-pods", type=int, default=1000, help="one-pod jobs in the session")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sessions", type=int, default=2, help="counted sessions (after one warm-up)")
    args = p.parse_args(argv)
    try:
        got = count_session(args.kind, args.nodes, args.gpus, args.session_pods, args.seed, args.sessions)
    except (RuntimeError, ValueError) as exc:
        print(f"vc-scheduler bench --devices --instructions: {exc}", file=sys.stderr)
        return 2
    print(got.line())
    return 0


if __name__ == "__main__":  # pragma: no cover - the counted child, started by count_session
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child_main(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))

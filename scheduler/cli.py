"""One entry point: `vc-scheduler [daemon flags]` runs the daemon; subcommands run the offline tools.

Bad input never produces a traceback: every user error is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from scheduler.__version__ import __version__

SUBCOMMANDS = ("simulate", "check-config", "bench", "sandbox")


def _simulate(argv: Sequence[str]) -> int:
    from scheduler.conf import ConfigError
    from scheduler.registry import default_configuration, load_file
    from scheduler.sim.manifests import ManifestError, Skipped, load_files
    from scheduler.sim.simulate import format_table, generated_objects, simulate

    p = argparse.ArgumentParser(
        prog="vc-scheduler simulate", description="Run scheduling sessions on manifests."
    )
    p.add_argument("-f", "--filename", action="append", required=True, help="manifest file (repeatable)")
    p.add_argument("--conf", help="scheduler configuration (volcano-scheduler.conf format)")
    p.add_argument("--cycles", type=int, default=1, help="number of scheduling cycles (default 1)")
    p.add_argument("-o", "--output", choices=("json", "table"), default="table")
    p.add_argument("--seed", type=int, default=0, help="seed for the random tie-break between equal nodes")
    p.add_argument(
        "--nodes",
        action="append",
        default=[],
        metavar="SPEC",
        help="generated nodes, as the sandbox's --nodes",
    )
    p.add_argument(
        "--topology", metavar="LEVELS", help="HyperNodes over the generated nodes, e.g. spine=4,leaf=8"
    )
    args = p.parse_args(argv)
    try:
        conf = load_file(args.conf) if args.conf else default_configuration()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    skipped: list[Skipped] = []
    try:
        objects = load_files(args.filename, skipped)
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        objects = generated_objects(args.nodes, args.topology) + objects
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = simulate(objects, conf, cycles=args.cycles, seed=args.seed, skipped=skipped)
    if args.output == "json":  # the table shows these itself
        for w in conf.warnings:
            print(f"warning: {w}", file=sys.stderr)
        for s in result.skipped:
            print(f"skipped {s.where}: {s.reason}", file=sys.stderr)
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_table(result))
    return 0


def _check_config(argv: Sequence[str]) -> int:
    from scheduler.conf import ConfigError
    from scheduler.registry import load_file

    p = argparse.ArgumentParser(
        prog="vc-scheduler check-config", description="Validate a scheduler configuration."
    )
    p.add_argument("file")
    args = p.parse_args(argv)
    try:
        conf = load_file(args.file)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for w in conf.warnings:
        print(f"warning: {w}", file=sys.stderr)
    tiers = " | ".join(", ".join(p.name for p in t.plugins) for t in conf.tiers)
    print(f"{args.file}: valid; actions: {', '.join(conf.actions)}; tiers: {tiers}")
    return 0


def _bench(argv: Sequence[str]) -> int:
    from scheduler.sim.bench import main as bench_main

    return bench_main(argv)


def _sandbox(argv: Sequence[str]) -> int:
    from scheduler.sim.sandbox import main as sandbox_main

    return sandbox_main(argv)


def _daemon(argv: Sequence[str]) -> int:
    from scheduler.daemon import main as daemon_main

    return daemon_main(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("--version", "version"):
        print(f"vc-scheduler {__version__}")
        return 0
    if args and args[0] in ("-h", "--help", "help"):
        print(
            "usage: vc-scheduler [daemon flags] | vc-scheduler {simulate,check-config,bench,sandbox} ...\n\n"
            "  (no subcommand)  run the scheduler daemon (see vc-scheduler daemon --help)\n"
            "  simulate         run sessions on manifests, no cluster needed\n"
            "  check-config     validate a volcano-scheduler.conf\n"
            "  bench            measure decisions per second on a generated cluster\n"
            "  sandbox          embedded API server with simulated kubelets (+ the daemon)\n"
        )
        return 0
    try:
        if args and args[0] == "simulate":
            return _simulate(args[1:])
        if args and args[0] == "check-config":
            return _check_config(args[1:])
        if args and args[0] == "bench":
            return _bench(args[1:])
        if args and args[0] == "sandbox":
            return _sandbox(args[1:])
        if args and args[0] == "daemon":
            args = args[1:]
        return _daemon(args)
    except KeyboardInterrupt:
        return 130

"""One entry point: `vc-scheduler [daemon flags]` runs the daemon; subcommands run the offline tools.

Bad input never produces a traceback: every user error is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from scheduler.__version__ import __version__

SUBCOMMANDS = ("simulate", "check-config", "bench", "sandbox", "explain", "snapshot")


def _simulate(argv: Sequence[str]) -> int:
    from scheduler.conf import ConfigError
    from scheduler.sim.manifests import ManifestError, Skipped, load_files
    from scheduler.sim.simulate import format_table, generated_objects, simulate

    p = argparse.ArgumentParser(
        prog="vc-scheduler simulate", description="Run scheduling sessions on manifests."
    )
    p.add_argument("-f", "--filename", action="append", required=True, help="manifest file (repeatable)")
    p.add_argument("--conf", help="scheduler configuration (volcano-scheduler.conf format)")
    p.add_argument("--cycles", type=int, default=1, help="number of scheduling cycles (default 1)")
    p.add_argument(
        "-o",
        "--output",
        choices=("json", "table", "html"),
        default="table",
        help="table (default), json, or html: the web view of the last session as one self-contained page",
    )
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
    try:
        conf = _configuration(args.conf, objects)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = simulate(objects, conf, cycles=args.cycles, seed=args.seed, skipped=skipped)
    if args.output in ("json", "html"):  # the table shows these itself
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr)
        for s in result.skipped:
            print(f"skipped {s.where}: {s.reason}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps(result.to_json(), indent=2))
    elif args.output == "html":
        from scheduler.web.explain import explain
        from scheduler.web.page import render
        from scheduler.web.summary import summary_of

        sys.stdout.write(render(summary_of(result.cycles, result.session), explain))
    else:
        print(format_table(result))
    return 0


def _configuration(path: str | None, objects: list[dict[str, Any]], say_default: bool = False) -> Any:
    """--conf, else the scheduler ConfigMap among the objects (a snapshot has it), else the default."""
    from scheduler.registry import default_configuration, load_file, parse
    from scheduler.snapshot import scheduler_conf_text

    if path:
        return load_file(path)
    found = scheduler_conf_text(objects)
    if found is not None:
        print(f"configuration: {found[0]} (from the input)", file=sys.stderr)
        return parse(found[1], found[0])
    if say_default:
        print(
            "configuration: Volcano's built-in default (no --conf, and no scheduler ConfigMap in the input)",
            file=sys.stderr,
        )
    return default_configuration()


def _read_cluster(kubeconfig: str) -> list[dict[str, Any]] | None:
    """Every object the scheduler reads, read-only; None (said on stderr) when the cluster cannot be read."""
    import asyncio
    import os

    from scheduler.snapshot import dump

    if kubeconfig and not os.path.isfile(kubeconfig):
        print(f"error: kubeconfig {kubeconfig} does not exist", file=sys.stderr)
        return None
    try:
        return asyncio.run(dump(kubeconfig))
    except Exception as exc:  # unreachable, refused, no CRDs: one line, no traceback
        print(f"error: cannot read the cluster: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _explain(argv: Sequence[str]) -> int:
    from scheduler.conf import ConfigError
    from scheduler.sim.manifests import ManifestError, Skipped, load_files
    from scheduler.sim.simulate import simulate
    from scheduler.web.explain import explain, format_text
    from scheduler.web.summary import summary_of

    p = argparse.ArgumentParser(
        prog="vc-scheduler explain",
        description="Why does a pod wait? Runs one session in memory on a cluster's objects (read-only) "
        "or on manifests, and explains the pod with numbers.",
    )
    p.add_argument("pod", metavar="NAMESPACE/POD")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--kubeconfig", help="read the cluster (lists only; default: $KUBECONFIG / in-cluster)")
    src.add_argument("-f", "--filename", action="append", help="manifests instead of a cluster (repeatable)")
    p.add_argument("--conf", help="scheduler configuration (default: the cluster's scheduler ConfigMap)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    ns, sep, name = args.pod.partition("/")
    if not sep:
        ns, name = "default", args.pod
    skipped: list[Skipped] = []
    try:
        objects = (
            load_files(args.filename, skipped) if args.filename else _read_cluster(args.kubeconfig or "")
        )
        if objects is None:
            return 1
        conf = _configuration(args.conf, objects, say_default=True)
    except (ManifestError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = simulate(objects, conf, skipped=skipped)
    view = summary_of(result.cycles, result.session).view
    found = explain(view, ns, name) if view is not None else None
    if found is None:
        print(f"error: pod {ns}/{name} is not scheduled by this scheduler or does not exist", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(found, indent=2))
    else:
        print(format_text(found))
    return 0


def _snapshot(argv: Sequence[str]) -> int:
    import yaml

    p = argparse.ArgumentParser(
        prog="vc-scheduler snapshot",
        description="Write everything the scheduler reads from a cluster (all namespaces, read-only) "
        "into one multi-document YAML file that simulate and explain replay.",
    )
    p.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG / in-cluster)")
    p.add_argument("-o", "--output", required=True, help="file to write, or - for stdout")
    args = p.parse_args(argv)
    objects = _read_cluster(args.kubeconfig or "")
    if objects is None:
        return 1
    text = yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    counts: dict[str, int] = {}
    for o in objects:
        counts[o["kind"]] = counts.get(o["kind"], 0) + 1
    summary = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items())
    print(f"wrote {len(objects)} objects ({summary}) to {args.output}", file=sys.stderr)
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
        for e in exc.errors:
            print(f"error: {e}", file=sys.stderr)
        if len(exc.errors) > 1:
            print(f"{args.file}: {len(exc.errors)} errors", file=sys.stderr)
        return 1
    for w in conf.warnings:
        print(f"warning: {w}", file=sys.stderr)
    # only plugins that run; the skipped ones (Volcano's, not implemented) are named apart
    tiers = " | ".join(", ".join(p.name for p in t.plugins if p.implemented) for t in conf.tiers)
    skipped = [p.name for t in conf.tiers for p in t.plugins if not p.implemented]
    note = f"; skipped (not implemented): {', '.join(skipped)}" if skipped else ""
    print(f"{args.file}: valid; actions: {', '.join(conf.actions)}; tiers: {tiers}{note}")
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
            "usage: vc-scheduler [daemon flags] | vc-scheduler {simulate,check-config,bench,sandbox,explain,snapshot} ...\n\n"
            "  (no subcommand)  run the scheduler daemon (see vc-scheduler daemon --help)\n"
            "  simulate         run sessions on manifests, no cluster needed\n"
            "  check-config     validate a volcano-scheduler.conf\n"
            "  bench            measure decisions per second on a generated cluster\n"
            "  sandbox          embedded API server with simulated kubelets (+ the daemon)\n"
            "  explain          why a pod waits, with numbers (a cluster read-only, or manifests)\n"
            "  snapshot         write a cluster's scheduling objects to one file (for simulate/explain)\n"
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
        if args and args[0] == "explain":
            return _explain(args[1:])
        if args and args[0] == "snapshot":
            return _snapshot(args[1:])
        if args and args[0] == "daemon":
            args = args[1:]
        return _daemon(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head`: the reader is gone, nothing left to say
        sys.stderr.close()
        return 0

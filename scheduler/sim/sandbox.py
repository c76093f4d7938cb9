"""`vc-scheduler sandbox`: an embedded Kubernetes API server, simulated kubelets, controllers and
device plugins, and (unless `--no-scheduler`) the real daemon scheduling against it over HTTP.

Unknown flags are passed to the daemon (`--scheduler-conf`, `--schedule-period`, ...), which runs
as a child process exactly as it would in a cluster. Prints one line saying where it serves and how
to use kubectl, then runs until SIGINT/SIGTERM and stops everything cleanly. Bounded runs
(`--run-for`, `--exit-after-settle`) stop by themselves and print the final pods and PodGroups:
that is how `make demo` is tested.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scheduler.sim.controllers import (
    HyperNodeStatusController,
    JobController,
    PodGroupController,
    ensure_default_queues,
)
from scheduler.sim.defaultscheduler import DefaultScheduler
from scheduler.sim.gc import GarbageCollector
from scheduler.sim.kubelet import SimulatedKubelets
from scheduler.sim.manifests import ManifestError, Skipped, load_files
from scheduler.sim.nodegen import NodeSpecError, device_configmap, make_nodes, parse_node_spec
from scheduler.sim.nodelifecycle import NodeLifecycleController
from scheduler.sim.policycontrollers import DisruptionController, QuotaController
from scheduler.sim.restclient import NAMESPACES, ApiError, RestClient, resource_for
from scheduler.sim.topologygen import TopologySpecError, make_hypernodes, parse_topology_spec
from scheduler.sim.workloads import WorkloadControllers

log = logging.getLogger("sandbox")

SYSTEM_NAMESPACES = ("default", "kube-system", "volcano-system")
# Objects that must exist before the ones that refer to them.
CREATE_ORDER = {
    "Namespace": 0,
    "CustomResourceDefinition": 0,
    "PriorityClass": 1,
    "ConfigMap": 1,
    "Queue": 2,
    "Node": 3,
    "HyperNode": 4,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vc-scheduler sandbox",
        description="Embedded Kubernetes-compatible API server with simulated kubelets and the scheduler daemon.",
        epilog="Any other flag is passed to the scheduler daemon (e.g. --scheduler-conf FILE --schedule-period 500ms).",
    )
    p.add_argument(
        "-f", "--filename", action="append", default=[], help="manifest to create at start (repeatable)"
    )
    p.add_argument(
        "--nodes",
        action="append",
        default=[],
        metavar="SPEC",
        help="generated nodes: N or N:cpu=8,memory=32Gi,gpu=8xA100-80GB,mode=hami-core (repeatable)",
    )
    p.add_argument(
        "--topology",
        metavar="LEVELS",
        help="HyperNodes over the generated nodes, top level first: e.g. spine=4,leaf=8 "
        "(4 spines of 8 leaves; the nodes are dealt out to the leaves in blocks)",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="API server port (0 = any free port)")
    p.add_argument("--tls", action="store_true", help="serve HTTPS with a generated self-signed CA")
    p.add_argument("--kubeconfig-out", help="where to write the kubeconfig (default: a temporary file)")
    p.add_argument("--no-scheduler", action="store_true", help="do not start the scheduler daemon")
    p.add_argument(
        "--default-scheduler",
        action="store_true",
        help="also bind pods of the default scheduler (a stand-in for kube-scheduler: requests, "
        "nodeSelector, taints), so ordinary Deployments run, e.g. an install of deploy/",
    )
    p.add_argument(
        "--pod-start-delay", type=float, default=0.2, help="seconds before a bound pod turns Running"
    )
    p.add_argument("--log-level", default="WARNING")
    p.add_argument(
        "--daemon-log", metavar="FILE", help="write the scheduler daemon's log here instead of to stderr"
    )
    p.add_argument(
        "--run-for",
        type=float,
        metavar="SECONDS",
        help="stop after SECONDS and print the final pods and PodGroups (default: run until Ctrl-C)",
    )
    p.add_argument(
        "--exit-after-settle",
        action="store_true",
        help="stop once pods, PodGroups and Jobs have not changed for --settle-seconds "
        "(at most --run-for, default 120 s) and print them",
    )
    p.add_argument("--settle-seconds", type=float, default=3.0, help="quiet time that counts as settled")
    p.add_argument(
        "--no-web",
        action="store_true",
        help="do not turn on the daemon's web view and metrics (on by default in the sandbox)",
    )
    return p


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def web_flags(daemon_args: list[str], host: str, no_web: bool) -> tuple[list[str], str]:
    """The daemon's flags with the web view and metrics on, and the web view's URL ("" if off).

    Without `--listen-address` (or with port 0) the daemon would take :8080 on all interfaces, or
    a port nobody knows; the sandbox picks a free port on its own host instead, so two sandboxes
    do not collide and the URL can be printed. The last `--listen-address` wins, as in the daemon.
    """
    if no_web:
        return list(daemon_args), ""
    args: list[str] = []
    listen = ""
    skip_next = False
    for i, a in enumerate(daemon_args):
        if skip_next:
            skip_next = False
        elif a.startswith("--listen-address="):
            listen = a.split("=", 1)[1]
        elif a == "--listen-address" and i + 1 < len(daemon_args):
            listen, skip_next = daemon_args[i + 1], True
        else:
            args.append(a)
    web_host, _, port = listen.rpartition(":")
    if not listen or port in ("", "0"):
        web_host, port = web_host or host, str(free_port(web_host.strip("[]") or host))
    listen = f"{web_host}:{port}"
    args.append(f"--listen-address={listen}")
    for flag in ("--enable-web", "--enable-metrics"):
        if not any(a == flag or a.startswith(flag + "=") for a in args):
            args.append(flag)
    web_host = web_host.strip("[]")
    if web_host in ("", "0.0.0.0", "::"):
        web_host = "127.0.0.1"
    return args, f"http://{web_host}:{port}/"


# what "settled" watches: the objects a user looks at, not Leases or Events the daemon keeps writing
SETTLE_KEYS = frozenset(
    {"pods", "podgroups.scheduling.volcano.sh", "jobs.batch.volcano.sh", "jobs.batch", "deployments.apps"}
)
DEVICE_ANNOTATIONS = (
    "volcano.sh/vgpu-ids-new",
    "volcano.sh/gpu-index",
    "huawei.com/Ascend310P",
    "hami.io/vnpu-ids",
)


def kubectl_command() -> str:
    """How to call kubectl here: on PATH, else the one the Makefile extracts into the venv."""
    found = shutil.which("kubectl")
    if found:
        return "kubectl"
    bundled = Path(sys.prefix) / "k8s-bin" / "kubectl"
    return str(bundled) if bundled.is_file() else "kubectl"


def final_table(store: Any) -> str:
    """The pods (phase, node, device annotations) and PodGroups (phase) as plain columns."""
    rows = [("NAMESPACE", "POD", "PHASE", "NODE", "DEVICES")]
    for p in store.list("pods"):
        md, spec, status = p["metadata"], p.get("spec") or {}, p.get("status") or {}
        ann = md.get("annotations") or {}
        devices = " ".join(f"{k}={ann[k]}" for k in DEVICE_ANNOTATIONS if k in ann)
        rows.append(
            (
                md.get("namespace") or "",
                md["name"],
                str(status.get("phase") or "Pending"),
                str(spec.get("nodeName") or "-"),
                devices or "-",
            )
        )
    out = [_columns(rows), ""]
    groups = [("NAMESPACE", "PODGROUP", "PHASE", "MINMEMBER", "RUNNING")]
    for pg in store.list("podgroups"):
        md, st = pg["metadata"], pg.get("status") or {}
        groups.append(
            (
                md.get("namespace") or "",
                md["name"],
                str(st.get("phase") or "-"),
                str((pg.get("spec") or {}).get("minMember", "-")),
                str(st.get("running", 0)),
            )
        )
    out.append(_columns(groups))
    return "\n".join(out)


def _columns(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


async def jobs_expanded(store: Any, timeout: float = 10.0) -> None:
    """Wait until the Job controller has created the pods of every Volcano Job given at start.

    The daemon starts after this, so its first session sees each job whole, as it would on a
    cluster where the jobs were submitted before the scheduler came up.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        # the controller records a phase once the job's PodGroup and pods exist (or it failed)
        if all(
            ((j.get("status") or {}).get("state") or {}).get("phase")
            for j in store.iter_objects("jobs.batch.volcano.sh")
        ):
            return
        await asyncio.sleep(0.05)
    log.warning(
        "the Job controller did not expand every Job within %.0f s; starting the scheduler anyway", timeout
    )


def all_decided(store: Any) -> bool:
    """Every pod of ours is bound or carries the scheduler's PodScheduled condition (it was looked at)."""
    for p in store.iter_objects("pods"):
        spec = p.get("spec") or {}
        if spec.get("schedulerName") != "volcano" or spec.get("nodeName"):
            continue
        if not any(c.get("type") == "PodScheduled" for c in (p.get("status") or {}).get("conditions") or []):
            return False
    return True


async def wait_bounded(
    store: Any, run_for: float | None, settle: bool, settle_seconds: float, scheduler: bool
) -> None:
    """Return after `run_for` seconds, or (with `settle`) once the watched kinds stayed quiet.

    With a scheduler, quiet time counts only once it has decided on every pod: a daemon still
    starting up must not look like a settled cluster.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (run_for if run_for is not None else 120.0)
    last_change = [time.monotonic()]

    def seen(_type: str, key: str, _obj: Any) -> None:
        if key in SETTLE_KEYS:
            last_change[0] = time.monotonic()

    unsubscribe = store.subscribe(seen)
    try:
        while loop.time() < deadline:
            await asyncio.sleep(0.2)
            if (
                settle
                and time.monotonic() - last_change[0] >= settle_seconds
                and (not scheduler or all_decided(store))
            ):
                return
    finally:
        unsubscribe()


async def create_objects(client: RestClient, objects: list[dict[str, Any]], skipped: list[Skipped]) -> int:
    created = 0
    for obj in sorted(objects, key=lambda o: CREATE_ORDER.get(str(o.get("kind")), 9)):
        res = resource_for(obj)
        md = obj.get("metadata") or {}
        where = (
            f"{obj.get('kind')} {md.get('namespace') + '/' if md.get('namespace') else ''}{md.get('name')}"
        )
        if res is None:
            skipped.append(
                Skipped(where, f"kind {obj.get('apiVersion')}/{obj.get('kind')} is not served by the sandbox")
            )
            continue
        ns = (md.get("namespace") or "default") if res.namespaced else None
        status = obj.get("status")
        try:
            await client.create(res, obj, ns)
            if status and obj.get("kind") in ("Node", "Queue", "PodGroup"):
                # the API ignores status on create; set it as the component owning it would
                await client.patch(res, md["name"], {"status": status}, ns, sub="status")
            created += 1
        except ApiError as exc:
            skipped.append(Skipped(where, str(exc)))
    return created


async def run_sandbox(args: argparse.Namespace, daemon_args: list[str]) -> int:
    from scheduler.sim.apiserver import ApiServer
    from scheduler.sim.apiserver.server import settle_heap

    specs = [parse_node_spec(s) for s in args.nodes]
    skipped: list[Skipped] = []
    objects = load_files(args.filename, skipped) if args.filename else []

    server = ApiServer(host=args.host, port=args.port, tls=args.tls)
    await server.start()
    kubeconfig = args.kubeconfig_out or os.path.join(tempfile.mkdtemp(prefix="vc-sandbox-"), "kubeconfig")
    server.write_kubeconfig(kubeconfig)
    client = RestClient(server.url, **_client_auth(server))
    components: list[asyncio.Task[Any]] = []
    daemon: asyncio.subprocess.Process | None = None
    try:
        for ns in SYSTEM_NAMESPACES:
            with contextlib.suppress(ApiError):
                await client.create(
                    NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )
        await ensure_default_queues(client)
        nodes = make_nodes(specs)
        if args.topology:
            levels = parse_topology_spec(args.topology)
            objects = make_hypernodes(levels, [n["metadata"]["name"] for n in nodes]) + objects
        if any((s.gpus and s.mode not in ("gpushare", "nvidia", "")) or s.npus for s in specs):
            objects.insert(0, device_configmap())
        await create_objects(client, nodes + objects, skipped)
        # the initial cluster lives as long as the sandbox: keep it out of full collections, whose
        # pauses at 100,000s of objects would stall every watch (see docs/performance.md)
        settle_heap()
        for s in skipped:
            print(f"skipped {s.where}: {s.reason}", file=sys.stderr)
        kubelets = SimulatedKubelets(client, start_delay=args.pod_start_delay)
        for comp in (
            kubelets.run(),
            NodeLifecycleController(client).run(),
            JobController(client).run(),
            PodGroupController(client).run(),
            HyperNodeStatusController(client).run(),
            WorkloadControllers(client).run(),
            GarbageCollector(server.store).run(),
            DisruptionController(client).run(),
            QuotaController(client).run(),
            *([DefaultScheduler(client).run()] if args.default_scheduler else []),
        ):
            components.append(asyncio.ensure_future(comp))
        await jobs_expanded(server.store)
        web_url = ""
        if not args.no_scheduler:
            daemon_args, web_url = web_flags(daemon_args, args.host, args.no_web)
            cmd = [sys.executable, "-m", "scheduler", "--kubeconfig", kubeconfig, *daemon_args]
            if args.daemon_log:
                with open(args.daemon_log, "ab") as log_file:  # the child keeps its own descriptor
                    daemon = await asyncio.create_subprocess_exec(*cmd, stdout=log_file, stderr=log_file)
            else:
                daemon = await asyncio.create_subprocess_exec(*cmd)
        print(
            f"sandbox API server at {server.url} ({len(nodes)} generated nodes"
            f"{', scheduler running' if daemon else ', no scheduler'}); "
            f"use: {kubectl_command()} --kubeconfig {kubeconfig} get pods -A -w",
            flush=True,
        )
        if web_url:
            print(f"web view: {web_url} (metrics: {web_url}metrics)", flush=True)
        bounded = args.run_for is not None or args.exit_after_settle
        if daemon is not None and args.daemon_log:
            print(f"scheduler log: {args.daemon_log}{'' if bounded else '; stop with Ctrl-C'}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        waiters = [asyncio.ensure_future(stop.wait())]
        if bounded:
            waiters.append(
                asyncio.ensure_future(
                    wait_bounded(
                        server.store,
                        args.run_for,
                        args.exit_after_settle,
                        args.settle_seconds,
                        daemon is not None,
                    )
                )
            )
        if daemon is not None:
            waiters.append(asyncio.ensure_future(daemon.wait()))
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for w in waiters:
            w.cancel()
        if daemon is not None and daemon.returncode is not None and not stop.is_set():
            print(f"sandbox: the scheduler daemon exited with code {daemon.returncode}", file=sys.stderr)
            return daemon.returncode or 1
        if bounded:
            print(final_table(server.store), flush=True)
        return 0
    finally:
        if daemon is not None and daemon.returncode is None:
            daemon.terminate()
            try:
                await asyncio.wait_for(daemon.wait(), 15)
            except TimeoutError:
                daemon.kill()
        for c in components:
            c.cancel()
        await asyncio.gather(*components, return_exceptions=True)
        await client.close()
        await server.stop()


def _client_auth(server: Any) -> dict[str, Any]:
    ca = getattr(server, "ca_file", None)
    token = getattr(server, "token", None)
    return {"ca_file": ca, "token": token}


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args, daemon_args = parser.parse_known_args(list(argv))
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.run_for is not None and args.run_for <= 0:
        parser.error("--run-for must be positive")
    if args.settle_seconds <= 0:
        parser.error("--settle-seconds must be positive")
    try:
        for s in args.nodes:
            parse_node_spec(s)
        if args.topology:
            if not args.nodes:
                parser.error("--topology needs generated nodes (--nodes)")
            parse_topology_spec(args.topology)
        return asyncio.run(run_sandbox(args, daemon_args))
    except (NodeSpecError, ManifestError, TopologySpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0

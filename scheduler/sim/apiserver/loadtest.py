"""Load test of the sandbox API server on loopback: memory, writes/s, watch fan-out.

    python -m scheduler.sim.apiserver.loadtest [--nodes 5000 --pods 150000] [--writes 20000]
        [--concurrency 64] [--watchers 100] [--json]

The server runs in a child process (as the daemon would see it: another process on the same
machine), preloaded in-process with `--nodes` nodes and `--pods` pods (bound, Running, with
status as kubelets write it), and reports its resident memory. The parent then opens
`--watchers` pod watches, sends `--writes` pod creations from `--concurrency` HTTP connections,
and reports writes/s and how long every watcher took to receive every event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

import aiohttp

from scheduler.sim.apiserver import codec
from scheduler.sim.apiserver.server import rss_mb

POD_NS = "load"


def make_node(i: int) -> dict[str, Any]:
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", "volcano.sh/vgpu-number": "8", "volcano.sh/vgpu-memory": "81920"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i:05d}",
                                                             "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
            "status": {"capacity": dict(alloc), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "nodeInfo": {"kubeletVersion": "v1.35.0"}}}


def make_pod(i: int, ns: str = POD_NS) -> dict[str, Any]:
    job = f"job-{i // 8:06d}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{job}-worker-{i % 8}", "namespace": ns,
                         "labels": {"volcano.sh/job-name": job, "app": "train"},
                         "annotations": {"scheduling.k8s.io/group-name": job}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                 "resources": {"limits": {"cpu": "1", "memory": "2Gi", "volcano.sh/vgpu-number": "1"}}}]}}


def preload(store: Any, nodes: int, pods: int) -> None:
    """Fill the store as a busy cluster looks: pods bound and Running with kubelet-style status."""
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": POD_NS}})
    for i in range(nodes):
        store.create(make_node(i))
    for i in range(pods):
        p = store.create(make_pod(i, "default"))
        name = p["metadata"]["name"]
        if nodes:
            store.bind("default", name, {"target": {"name": f"node-{i % nodes:05d}"}})
            store.patch("pods", "default", name, {"status": {
                "phase": "Running", "hostIP": "10.0.0.1", "podIP": f"10.1.{i // 250 % 250}.{i % 250}",
                "startTime": "2026-01-01T00:00:00Z",
                "conditions": [{"type": t, "status": "True"} for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox:1.36",
                                       "started": True, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}},
                subresource="status")


async def serve(args: argparse.Namespace) -> None:
    from scheduler.sim.apiserver import ApiServer

    srv = ApiServer(port=0, history_size=args.history)
    t = time.perf_counter()
    base = rss_mb()
    preload(srv.store, args.nodes, args.pods)
    if args.gc_freeze:
        import gc

        gc.freeze()
    took = time.perf_counter() - t
    await srv.start()
    # one line on stdout tells the parent where to connect and what the preload cost
    print(json.dumps({"url": srv.url, "preload_seconds": round(took, 2), "rss_mb": round(rss_mb(), 1),
                      "rss_growth_mb": round(rss_mb() - base, 1)}), flush=True)
    try:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
    finally:
        await srv.stop()


async def _watch(session: aiohttp.ClientSession, url: str, rv: str, expect: int, done: list[float], started: float) -> int:
    seen = 0
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"}
    async with session.get(f"{url}/api/v1/namespaces/{POD_NS}/pods", params=params,
                           timeout=aiohttp.ClientTimeout(total=None, sock_read=120)) as r:
        # count lines without parsing them: the client must not be what is measured
        async for chunk in r.content.iter_any():
            seen += chunk.count(b"\n")
            if seen >= expect:
                done.append(time.perf_counter() - started)
                return seen
    return seen


async def drive(args: argparse.Namespace) -> dict[str, Any]:
    if args.url:
        return await measure(args, args.url, {"nodes": None, "pods": None, "fast_json": codec.FAST})
    cmd = [sys.executable, "-m", "scheduler.sim.apiserver.loadtest", "--serve", "--nodes", str(args.nodes),
           "--pods", str(args.pods), "--history", str(args.history), *(["--gc-freeze"] if args.gc_freeze else [])]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdin is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 1800))
    url = info["url"]
    result: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods, "server_rss_mb_after_preload": info["rss_mb"],
                              "preload_seconds": info["preload_seconds"], "fast_json": codec.FAST}
    try:
        return await measure(args, url, result)
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()


async def measure(args: argparse.Namespace, url: str, result: dict[str, Any]) -> dict[str, Any]:
    conn = aiohttp.TCPConnector(limit=args.concurrency + args.watchers + 8)
    async with aiohttp.ClientSession(connector=conn) as session:
        t = time.perf_counter()
        async with session.get(f"{url}/api/v1/pods", params={"limit": "500"}) as r:
            first_page = await r.read()
        result["list_first_page_ms"] = round((time.perf_counter() - t) * 1000, 1)
        rv = codec.loads(first_page)["metadata"]["resourceVersion"]
        started = time.perf_counter()
        done: list[float] = []
        watchers = [asyncio.ensure_future(_watch(session, url, rv, args.writes, done, started))
                    for _ in range(args.watchers)]
        await asyncio.sleep(0.5)
        counter = iter(range(args.writes))
        errors = 0

        async def writer() -> None:
            nonlocal errors
            errors += await _raw_writer(url, counter)

        async with session.get(f"{url}/sandbox/stats") as r:
            cpu_before = (await r.json())["cpu_seconds"]
        t = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(args.concurrency)))
        write_s = time.perf_counter() - t
        result.update(writes=args.writes, write_errors=errors, write_seconds=round(write_s, 2),
                      writes_per_second=round(args.writes / write_s))
        counts = await asyncio.wait_for(asyncio.gather(*watchers), 600)
        result.update(watchers=args.watchers, watchers_complete=sum(1 for c in counts if c >= args.writes),
                      events_delivered=sum(counts),
                      last_watcher_done_seconds=round(max(done), 2) if done else None,
                      watch_lag_after_writes_seconds=round(max(done) - write_s - 0.5, 2) if done else None)
        async with session.get(f"{url}/sandbox/stats") as r:
            stats = await r.json()
        result["server_rss_mb_end"] = stats.get("rss_mb")
        # server CPU per write, watch fan-out included: the figure that does not depend on the client
        result["server_cpu_us_per_write"] = round((stats["cpu_seconds"] - cpu_before) / args.writes * 1e6)
    return result


async def _raw_writer(url: str, counter: Any) -> int:
    """Create pods over one keep-alive connection with a minimal HTTP/1.1 client.

    aiohttp's client costs more CPU per request than the server does; on a 2-core machine it
    would measure the client. This one formats and parses the bare minimum.
    """
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    errors = 0
    head = (f"POST /api/v1/namespaces/{POD_NS}/pods HTTP/1.1\r\nHost: {host}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: ").encode()
    try:
        for i in counter:
            body = codec.dumps(make_pod(10_000_000 + i))
            writer.write(head + str(len(body)).encode() + b"\r\n\r\n" + body)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            if b" 201 " not in status_line:
                errors += 1
    finally:
        writer.close()
    return errors


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.sim.apiserver.loadtest", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=150_000)
    p.add_argument("--writes", type=int, default=20_000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--watchers", type=int, default=100)
    p.add_argument("--history", type=int, default=10_000)
    p.add_argument("--gc-freeze", action="store_true", help="freeze the preloaded heap out of the garbage collector")
    p.add_argument("--url", help="measure a server that is already running instead of starting one")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        from uvloop import run as run_loop  # the daemon's loop, so the figures are the daemon's
    except ImportError:
        run_loop = asyncio.run
    if args.serve:
        run_loop(serve(args))
        return 0
    result = run_loop(drive(args))
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:32} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

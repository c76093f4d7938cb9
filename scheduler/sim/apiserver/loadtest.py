"""Load test of the sandbox API server on loopback: memory, writes/s by verb, watch fan-out, lists.

    python -m scheduler.sim.apiserver.loadtest [--nodes 5000 --pods 150000] [--writes 20000]
        [--concurrency 64] [--watchers 100] [--rate 1000] [--output docs/performance.md] [--json]

The server runs in a child process (as the daemon would see it: another process on the same
machine), preloaded in-process with `--nodes` nodes and `--pods` pods (bound, Running, with
status as kubelets write it), and reports its resident memory. The parent then times lists of
every pod (whole, and in pages of 500), opens `--watchers` pod watches and runs four write
phases on `--writes` new pods from `--concurrency` keep-alive connections: creations,
bindings, kubelet-style status patches (strategic merge), then creations paced at `--rate`
per second. For each phase it reports writes/s and the fan-out latency: for every event and
every watcher, the time from sending the write to that watcher receiving its event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import aiohttp

from scheduler.sim.apiserver import codec
from scheduler.sim.apiserver.server import rss_mb, settle_heap
from scheduler.sim.report import load_average, load_sentence, replace_section

POD_NS = "load"
SECTION = "## Sandbox API server (`python -m scheduler.sim.apiserver.loadtest`)"
# at most this many latency samples per phase: every k-th event of every watcher
MAX_SAMPLES = 200_000
_CONTINUE = re.compile(rb'"continue":"([^"]+)"')


def make_node(i: int) -> dict[str, Any]:
    alloc = {
        "cpu": "64",
        "memory": "512Gi",
        "pods": "110",
        "volcano.sh/vgpu-number": "8",
        "volcano.sh/vgpu-memory": "81920",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i:05d}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i:05d}",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            },
        },
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": "v1.35.0"},
        },
    }


def make_pod(i: int, ns: str = POD_NS) -> dict[str, Any]:
    job = f"job-{i // 8:06d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{i % 8}",
            "namespace": ns,
            "labels": {"volcano.sh/job-name": job, "app": "train"},
            "annotations": {"scheduling.k8s.io/group-name": job},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "command": ["sleep", "3600"],
                    "resources": {"limits": {"cpu": "1", "memory": "2Gi", "volcano.sh/vgpu-number": "1"}},
                }
            ],
        },
    }


def running_status(i: int) -> dict[str, Any]:
    """The status a kubelet writes when the pod's containers started."""
    return {
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIP": f"10.1.{i // 250 % 250}.{i % 250}",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {"type": t, "status": "True"}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": True,
                    "restartCount": 0,
                    "image": "busybox:1.36",
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        }
    }


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
            store.patch("pods", "default", name, running_status(i), subresource="status")


async def serve(args: argparse.Namespace) -> None:
    from scheduler.sim.apiserver import ApiServer

    srv = ApiServer(port=0, history_size=args.history)
    t = time.perf_counter()
    base = rss_mb()
    preload(srv.store, args.nodes, args.pods)
    if args.gc_freeze:
        settle_heap()
    took = time.perf_counter() - t
    await srv.start()
    # one line on stdout tells the parent where to connect and what the preload cost
    print(
        json.dumps(
            {
                "url": srv.url,
                "preload_seconds": round(took, 2),
                "rss_mb": round(rss_mb(), 1),
                "rss_growth_mb": round(rss_mb() - base, 1),
            }
        ),
        flush=True,
    )
    try:
        await asyncio.get_running_loop().run_in_executor(
            None, sys.stdin.read
        )  # until the parent closes stdin
    finally:
        await srv.stop()


# ---- requests: (method, path, content type, body) per write, keyed by pod name ----

Request = tuple[str, str, str, bytes]


def create_request(i: int) -> tuple[str, Request]:
    pod = make_pod(i)
    return pod["metadata"]["name"], (
        "POST",
        f"/api/v1/namespaces/{POD_NS}/pods",
        "application/json",
        codec.dumps(pod),
    )


def binding_request(i: int, nodes: int) -> tuple[str, Request]:
    name = make_pod(i)["metadata"]["name"]
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{i % max(1, nodes):05d}"},
    }
    return name, (
        "POST",
        f"/api/v1/namespaces/{POD_NS}/pods/{name}/binding",
        "application/json",
        codec.dumps(body),
    )


def status_request(i: int) -> tuple[str, Request]:
    name = make_pod(i)["metadata"]["name"]
    return name, (
        "PATCH",
        f"/api/v1/namespaces/{POD_NS}/pods/{name}/status",
        "application/strategic-merge-patch+json",
        codec.dumps(running_status(i)),
    )


class Watcher:
    """One pod watch that records when each chunk arrived and how many events it completed.

    Only the reference watcher decodes events (to learn which pod each event is about, in
    order); the others count newlines, so that the client is not what is measured.
    """

    def __init__(self, reference: bool) -> None:
        self.reference = reference
        self.chunks: list[tuple[float, int]] = []  # (arrival time, events completed by this chunk)
        self.lines = 0
        self.names: list[str] = []
        self._partial = b""

    async def run(self, session: aiohttp.ClientSession, url: str, rv: str) -> None:
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1800"}
        async with session.get(
            f"{url}/api/v1/namespaces/{POD_NS}/pods",
            params=params,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=300),
        ) as r:
            async for chunk in r.content.iter_any():
                n = chunk.count(b"\n")
                if n:
                    self.chunks.append((time.perf_counter(), n))
                    self.lines += n
                if self.reference:
                    self._decode(chunk)

    def _decode(self, chunk: bytes) -> None:
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            self.names.append(codec.loads(line)["object"]["metadata"]["name"])


async def _write_all(
    url: str,
    jobs: Iterator[tuple[str, Request]],
    sent: dict[str, float],
    rtts: list[float],
    pace: Callable[[], float] | None,
) -> int:
    """Send requests over one keep-alive connection with a minimal HTTP/1.1 client; returns errors.

    aiohttp's client costs more CPU per request than the server does; on a 2-core machine it
    would measure the client. This one formats and parses the bare minimum.
    """
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    errors = 0
    try:
        for name, (method, path, ctype, body) in jobs:
            if pace is not None:
                delay = pace() - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            head = (
                f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {ctype}\r\n"
                f"Accept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            t = time.perf_counter()
            sent[name] = t
            writer.write(head + body)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            rtts.append(time.perf_counter() - t)
            if status_line[9:10] != b"2":
                errors += 1
                del sent[name]
    finally:
        writer.close()
    return errors


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def fanout_latencies(
    watchers: list[Watcher], names: list[str], first: int, count: int, sent: dict[str, float]
) -> list[float]:
    """Latencies of events [first, first+count) of the stream across all watchers, sorted (sampled)."""
    step = max(1, count * len(watchers) // MAX_SAMPLES)
    t_send = [sent.get(n, float("nan")) for n in names[first : first + count]]
    out: list[float] = []
    for w in watchers:
        done = 0
        for t, n in w.chunks:
            lo, hi = done, done + n
            done = hi
            if hi <= first or lo >= first + count:
                continue
            # events that were completed by this chunk, inside the phase, every step-th one
            i = max(lo, first)
            i += (-(i - first)) % step
            while i < min(hi, first + count):
                out.append(t - t_send[i - first])
                i += step
    return sorted(x for x in out if x == x)


async def measure(args: argparse.Namespace, url: str, result: dict[str, Any]) -> dict[str, Any]:
    conn = aiohttp.TCPConnector(limit=args.concurrency + args.watchers + 8)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        result["lists"] = await measure_lists(session, url)
        async with session.get(f"{url}/api/v1/namespaces/{POD_NS}/pods", params={"limit": "1"}) as r:
            rv = codec.loads(await r.read())["metadata"]["resourceVersion"]
        watchers = [Watcher(reference=i == 0) for i in range(args.watchers)]
        tasks = [asyncio.ensure_future(w.run(session, url, rv)) for w in watchers]
        await asyncio.sleep(1.0)  # every watch established before the first write
        n = args.writes
        phases: list[tuple[str, Callable[[int], tuple[str, Request]], float | None]] = [
            ("create", create_request, None),
            ("binding", lambda i: binding_request(i, args.nodes), None),
            ("status patch", status_request, None),
            ("create, paced", lambda i: create_request(n + i), float(args.rate)),
        ]
        async with session.get(f"{url}/sandbox/stats") as r:
            cpu_before = (await r.json())["cpu_seconds"]
        rows: list[dict[str, Any]] = []
        sent_by_phase: list[dict[str, float]] = []
        for label, make, rate in phases:
            sent: dict[str, float] = {}
            rtts: list[float] = []
            jobs = (make(i) for i in range(n))
            t0 = time.perf_counter() + 0.01
            counter = iter(range(n))
            pace = (lambda: t0 + next(counter) / rate) if rate else None  # noqa: B023 - used within this iteration
            t = time.perf_counter()
            errors = sum(
                await asyncio.gather(
                    *(_write_all(url, jobs, sent, rtts, pace) for _ in range(args.concurrency))
                )
            )
            took = time.perf_counter() - t
            rtts.sort()
            rows.append(
                {
                    "phase": label,
                    "writes": n,
                    "errors": errors,
                    "seconds": round(took, 2),
                    "writes_per_second": round(n / took),
                    "target_rate": rate,
                    "request_ms_p50": round(percentile(rtts, 0.5) * 1000, 2),
                    "request_ms_p99": round(percentile(rtts, 0.99) * 1000, 2),
                }
            )
            sent_by_phase.append(sent)
            await asyncio.sleep(0.5)  # let the watchers drain before the next phase starts
        expected = sum(len(s) for s in sent_by_phase)
        deadline = time.monotonic() + 120
        while min(w.lines for w in watchers) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        names = watchers[0].names
        first = 0
        for row, sent in zip(rows, sent_by_phase, strict=True):
            lat = fanout_latencies(watchers, names, first, len(sent), sent)
            first += len(sent)
            row["fanout_ms_p50"] = round(percentile(lat, 0.5) * 1000, 2)
            row["fanout_ms_p99"] = round(percentile(lat, 0.99) * 1000, 2)
            row["fanout_ms_max"] = round(lat[-1] * 1000, 2) if lat else None
        result.update(
            phases=rows,
            watchers=args.watchers,
            watchers_complete=sum(1 for w in watchers if w.lines >= expected),
            events_expected_per_watcher=expected,
        )
        async with session.get(f"{url}/sandbox/stats") as r:
            stats = await r.json()
        result["server_rss_mb_end"] = stats.get("rss_mb")
        total_writes = sum(r["writes"] - r["errors"] for r in rows)
        # server CPU per write, watch fan-out included: the figure that does not depend on the client
        result["server_cpu_us_per_write"] = round(
            (stats["cpu_seconds"] - cpu_before) / max(1, total_writes) * 1e6
        )
    return result


async def measure_lists(session: aiohttp.ClientSession, url: str, repeats: int = 3) -> dict[str, Any]:
    """Every pod in the cluster, in pages of 500 (as informers list) and in one response.

    The first paged pass meets every object unencoded (as a daemon starting against a fresh
    server does); later lists reuse the encodings the server cached, until objects change.
    """

    async def paged() -> tuple[float, float, int]:
        token: str | None = None
        pages = 0
        first_page = 0.0
        t = time.perf_counter()
        while True:
            params = {"limit": "500", **({"continue": token} if token else {})}
            async with session.get(f"{url}/api/v1/pods", params=params) as r:
                body = await r.read()
            pages += 1
            if pages == 1:
                first_page = time.perf_counter() - t
            # metadata precedes items: the token is in the first bytes, no need to decode the page
            m = _CONTINUE.search(body, 0, 400)
            if m is None:
                break
            token = m.group(1).decode()
        return time.perf_counter() - t, first_page, pages

    cold, cold_first_page, pages = await paged()
    whole: list[float] = []
    size = 0
    for _ in range(repeats):
        t = time.perf_counter()
        async with session.get(f"{url}/api/v1/pods") as r:
            body = await r.read()
        whole.append(time.perf_counter() - t)
        size = len(body)
        del body
    warm = sorted([(await paged())[0] for _ in range(repeats)])
    async with session.get(f"{url}/api/v1/pods", params={"limit": "1"}) as r:
        items = int(codec.loads(await r.read())["metadata"].get("remainingItemCount", 0)) + 1
    whole.sort()
    return {
        "pods": items,
        "paged_cold_ms": round(cold * 1000),
        "first_page_ms": round(cold_first_page * 1000, 1),
        "pages": pages,
        "paged_warm_ms": round(warm[len(warm) // 2] * 1000),
        "whole_list_ms": round(whole[len(whole) // 2] * 1000),
        "whole_list_mb": round(size / 2**20, 1),
    }


async def drive(args: argparse.Namespace) -> dict[str, Any]:
    if args.url:
        return await measure(args, args.url, {"nodes": None, "pods": None, "fast_json": codec.FAST})
    cmd = [
        sys.executable,
        "-m",
        "scheduler.sim.apiserver.loadtest",
        "--serve",
        "--nodes",
        str(args.nodes),
        "--pods",
        str(args.pods),
        "--history",
        str(args.history),
        *([] if args.gc_freeze else ["--no-gc-freeze"]),
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
    )
    assert proc.stdout is not None and proc.stdin is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 1800))
    result: dict[str, Any] = {
        "nodes": args.nodes,
        "pods": args.pods,
        "server_rss_mb_after_preload": info["rss_mb"],
        "preload_seconds": info["preload_seconds"],
        "fast_json": codec.FAST,
        "gc_freeze": args.gc_freeze,
    }
    try:
        return await measure(args, info["url"], result)
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()


def render(result: dict[str, Any], command: str, load_before: str, load_after: str) -> str:
    """The Markdown section: the command, the figures, and the goals of issue #4 checked."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lists = result["lists"]
    rss = max(result["server_rss_mb_after_preload"], result.get("server_rss_mb_end") or 0)
    lines = [
        SECTION,
        "",
        f"Command: `{command}` (taken {when}, Python {platform.python_version()}, "
        f"{'orjson' if result['fast_json'] else 'standard-library json'}, load average {load_before} before and "
        f"{load_after} after the run).",
        "",
        f"The server is a child process preloaded with {result['nodes']:,} Ready nodes and {result['pods']:,} pods, "
        "bound and Running with the status kubelets write. The client holds "
        f"{result['watchers']} watches of pods and writes {result['phases'][0]['writes']:,} new pods in each phase "
        "from keep-alive connections (a minimal HTTP/1.1 writer, so that the client's CPU is not what is "
        "measured); the phases follow each other: creations, bindings (`pods/binding`), status patches "
        "(strategic merge, as kubelets send them) at full speed, then creations paced at a fixed rate. "
        "Fan-out latency is, for every event and every watcher, the time from sending the write to that "
        "watcher receiving the event: it includes the write's own queueing at full speed. Every watcher "
        "watches every pod, the worst case (kubelets watch only their node's pods): a status patch's event, "
        "the largest, is sent 100 times, and the client reading all of it shares the 2 cores with the server. "
        + (
            ""
            if result["fast_json"]
            else "JSON was the standard library's: `orjson` (a dependency; "
            "`scheduler/sim/apiserver/codec.py` uses it when installed) was not installed. "
        )
        + (
            "After the preload the server moves its heap out of the garbage collector's reach (`gc.freeze()`) "
            "and collects less often (`settle_heap()` in `server.py`), as `vc-scheduler sandbox` does after "
            "creating its initial objects: without it, full collections over the preloaded objects stall every "
            "request and watch for up to a second (`--no-gc-freeze` measures that)."
            if result.get("gc_freeze")
            else "The preloaded heap was left to the garbage collector (`--no-gc-freeze`)."
        ),
        "",
        "| phase | writes/s | request p50 / p99 (ms) | fan-out p50 / p99 / max (ms) | errors |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["phases"]:
        label = row["phase"] + (f" at {row['target_rate']:,.0f}/s" if row.get("target_rate") else "")
        lines.append(
            f"| {label} | {row['writes_per_second']:,} | {row['request_ms_p50']} / {row['request_ms_p99']} | "
            f"{row['fanout_ms_p50']} / {row['fanout_ms_p99']} / {row['fanout_ms_max']} | {row['errors']} |"
        )
    lines += [
        "",
        f"- Server memory: {result['server_rss_mb_after_preload']:,.0f} MiB RSS after the preload, "
        f"{(result.get('server_rss_mb_end') or 0):,.0f} MiB at the end, holding "
        f"{result['pods'] + 2 * result['phases'][0]['writes']:,} pods after the lists and writes "
        f"(preload took {result['preload_seconds']} s).",
        f"- Server CPU: {result['server_cpu_us_per_write']} µs per write, fan-out to {result['watchers']} watchers included.",
        f"- Watchers that received every event: {result['watchers_complete']} of {result['watchers']}.",
        f"- List of all {lists['pods']:,} pods in {lists['pages']} pages of 500 (as informers list): "
        f"{lists['paged_cold_ms']:,} ms the first time (first page {lists['first_page_ms']} ms), when the server "
        f"encodes every object; {lists['paged_warm_ms']:,} ms again, from the encodings it keeps until an object "
        f"changes. In one response ({lists['whole_list_mb']} MiB): {lists['whole_list_ms']:,} ms. Medians of 3 "
        "but the first pass; the client reads bytes without decoding them.",
    ]
    full_speed = [r for r in result["phases"] if not r.get("target_rate")]
    slowest = min(r["writes_per_second"] for r in full_speed)
    goal_mem = rss <= 2048 and result["nodes"] >= 5000 and result["pods"] >= 150_000
    goal_writes = (
        slowest >= 2000 and result["watchers"] >= 100 and result["watchers_complete"] == result["watchers"]
    )
    lines += [
        f"- Goal 5,000 nodes and 150,000 pods in ≤ 2 GB: {'reached' if goal_mem else 'not reached'} "
        f"({rss:,.0f} MiB at {result['nodes']:,} nodes and {result['pods']:,} pods).",
        f"- Goal ≥ 2,000 writes/s with 100 concurrent watches on 2 cores: {'reached' if goal_writes else 'not reached'} "
        f"(slowest verb {slowest:,}/s with {result['watchers']} watches).",
        f"- {load_sentence(load_before, load_after)}",
        "",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scheduler.sim.apiserver.loadtest", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=150_000)
    p.add_argument("--writes", type=int, default=20_000, help="writes per phase")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--watchers", type=int, default=100)
    p.add_argument("--rate", type=float, default=1000.0, help="writes/s of the paced phase")
    p.add_argument("--history", type=int, default=10_000)
    p.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="leave the garbage collector as Python sets it (the sandbox tunes it after its initial objects)",
    )
    p.add_argument("--url", help="measure a server that is already running instead of starting one")
    p.add_argument("--output", help="rewrite this load test's section of this Markdown file")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if (
        args.writes < 1
        or args.concurrency < 1
        or args.watchers < 1
        or args.rate <= 0
        or args.nodes < 0
        or args.pods < 0
    ):
        p.error(
            "--writes, --concurrency, --watchers and --rate must be positive, --nodes and --pods not negative"
        )
    if args.output and args.url:
        p.error("--output needs the preloaded server this command starts (not --url)")
    try:
        from uvloop import run as run_loop  # the daemon's loop, so the figures are the daemon's
    except ImportError:
        run_loop = asyncio.run
    if args.serve:
        run_loop(serve(args))
        return 0
    load_before = load_average()
    result = run_loop(drive(args))
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            if k == "phases":
                for row in v:
                    print(
                        f"{'phase ' + row['phase']:32} "
                        + " ".join(f"{a}={b}" for a, b in row.items() if a != "phase")
                    )
            else:
                print(f"{k:32} {v}")
    if args.output:
        command = "python -m scheduler.sim.apiserver.loadtest " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]) if a != "--json"
        )
        replace_section(args.output, SECTION, render(result, command.strip(), load_before, load_average()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

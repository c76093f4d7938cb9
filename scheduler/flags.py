"""The daemon's command line: Volcano's vc-scheduler flags (spec 1.3) parsed into `Options`.

Flags keep Volcano's names, defaults and Go syntax (durations such as `1m30s`, pflag booleans
`--flag=false`, klog's `-v=4`) so existing Deployment manifests start unchanged. Flags Volcano has
that change nothing here are accepted and reported once in the log, never refused.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.duration import parse_duration
from scheduler.reload import DEFAULT_CONFIGMAP, DEFAULT_CONFIGMAP_NAMESPACE


def _duration_arg(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bool_arg(text: str) -> bool:
    v = text.strip().lower()
    if v in ("1", "t", "true", "yes", "y", "on"):
        return True
    if v in ("0", "f", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (use true or false)")


def _verbosity_arg(text: str) -> int:
    try:
        return int(text.lstrip("="))  # `-v=4` reaches us as "=4"
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {text!r} (an integer, e.g. -v=4)") from None


# Volcano flags we accept so existing manifests start unchanged, but that change nothing here.
_ACCEPTED_ONLY = {
    "--resync-period": "informers watch continuously; a periodic resync adds nothing",
    "--enable-pprof": "no pprof endpoint in the Python scheduler",
    "--plugins-dir": "out-of-tree Go plugins cannot be loaded",
    "--csi-storage": "volume binding is not modelled",
    "--cache-dumper": "no cache dumper",
    "--cache-dump-dir": "no cache dumper",
    "--node-worker-threads": "nodes are applied on the event loop",
    "--scheduler-sharding-mode": "sharding is not supported",
    "--scheduler-sharding-name": "sharding is not supported",
    "--ca-cert-file": "the webhook TLS flags do not apply to the scheduler",
    "--tls-cert-file": "the webhook TLS flags do not apply to the scheduler",
    "--tls-private-key-file": "the webhook TLS flags do not apply to the scheduler",
    "--gate-removal-worker-num": "scheduling-gate admission is not supported",
    "--ignored-provisioners": "volume binding is not modelled",
    "--logtostderr": "logs always go to stderr",
    "--log-flush-frequency": "logs are written unbuffered",
}


@dataclass(slots=True)
class Options:
    scheduler_names: list[str] = field(default_factory=lambda: ["volcano"])
    scheduler_conf: str = ""
    schedule_period: float = 1.0
    schedule_on_arrival: bool = True
    default_queue: str = "default"
    listen_address: str = ":8080"
    healthz_address: str = ":11251"
    enable_healthz: bool = False
    enable_metrics: bool = False
    enable_web: bool = False
    priority_class: bool = True
    kubeconfig: str = ""
    master: str = ""
    kube_api_qps: float = 2000.0
    kube_api_burst: int = 2000
    minimum_feasible_nodes: int = 100
    minimum_percentage_nodes_to_find: int = 5
    percentage_nodes_to_find: int = 0
    node_selector: dict[str, set[str]] = field(default_factory=dict)
    resource_sync_timeout: float = 60.0
    disable_default_scheduler_config: bool = False
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    lease_namespace: str = "volcano-system"
    lease_name: str = "volcano"
    scheduler_configmap: str = DEFAULT_CONFIGMAP
    scheduler_configmap_namespace: str = DEFAULT_CONFIGMAP_NAMESPACE
    verbosity: int = 0
    log_format: str = "json"
    dry_run: bool = False
    drain_timeout: float = 10.0
    healthz_max_failed_sessions: int = 5
    version: bool = False
    notes: list[str] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vc-scheduler",
        description="Volcano-compatible batch scheduler daemon (flags as Volcano's vc-scheduler).",
        allow_abbrev=False,
    )

    def flag(*names: str, **kw: Any) -> None:
        p.add_argument(*names, **kw)

    def bool_flag(name: str, default: bool, help: str) -> None:
        # pflag style: `--flag`, `--flag=true|false`
        p.add_argument(
            name, nargs="?", const=True, default=default, type=_bool_arg, metavar="BOOL", help=help
        )

    flag(
        "--scheduler-name",
        action="append",
        help="handle pods with this spec.schedulerName (repeatable; default volcano)",
    )
    flag(
        "--scheduler-conf",
        default="",
        help="scheduler configuration file (volcano-scheduler.conf); empty: built-in default",
    )
    flag(
        "--schedule-period",
        type=_duration_arg,
        default=1.0,
        help="period between sessions (Go duration, default 1s)",
    )
    bool_flag(
        "--schedule-on-arrival",
        True,
        "start a session soon after new pending pods are watched (once their stream pauses, "
        "no sooner than half the last session's duration after it) instead of at the end of the period; "
        "false: Volcano's fixed period (default true)",
    )
    flag("--default-queue", default="default", help="queue of PodGroups that name none (default 'default')")
    flag("--listen-address", default=":8080", help="address of /metrics, /healthz, /readyz (default :8080)")
    flag(
        "--healthz-address",
        default=":11251",
        help="extra address serving /healthz with --enable-healthz (default :11251)",
    )
    bool_flag("--enable-healthz", False, "also serve the health endpoints on --healthz-address")
    bool_flag("--enable-metrics", False, "serve Prometheus metrics on /metrics")
    bool_flag(
        "--enable-web",
        False,
        "serve the read-only web view (/ and /api/...) on --listen-address, from the last session's state",
    )
    bool_flag("--priority-class", True, "honour PriorityClasses (default true)")
    flag(
        "--kubeconfig",
        default="",
        help="kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)",
    )
    flag("--master", default="", help="API server address (overrides the kubeconfig)")
    flag("--kube-api-qps", type=float, default=2000.0, help="API requests per second (default 2000)")
    flag("--kube-api-burst", type=int, default=2000, help="API request burst (default 2000)")
    flag("--minimum-feasible-nodes", type=int, default=100)
    flag("--minimum-percentage-nodes-to-find", type=int, default=5)
    flag("--percentage-nodes-to-find", type=int, default=0, help="<= 0: adaptive")
    flag(
        "--node-selector",
        action="append",
        default=[],
        help="key:value; only nodes matching one are scheduled on (repeatable)",
    )
    flag(
        "--resource-sync-timeout",
        type=_duration_arg,
        default=60.0,
        help="how long to wait for the initial sync before complaining (default 60s)",
    )
    bool_flag(
        "--disable-default-scheduler-config",
        False,
        "exit instead of using the built-in default when --scheduler-conf is invalid",
    )
    bool_flag("--leader-elect", True, "run only while holding the leader Lease (default true)")
    flag("--leader-elect-lease-duration", type=_duration_arg, default=15.0)
    flag("--leader-elect-renew-deadline", type=_duration_arg, default=10.0)
    flag("--leader-elect-retry-period", type=_duration_arg, default=2.0)
    flag("--leader-elect-resource-lock", default="leases", help="only 'leases' is supported")
    flag(
        "--leader-elect-resource-name",
        default="",
        help="Lease name (default: the scheduler name, or volcano)",
    )
    flag("--leader-elect-resource-namespace", default="", help="Lease namespace (default volcano-system)")
    flag("--lock-object-namespace", default="", help="deprecated alias of --leader-elect-resource-namespace")
    flag(
        "--scheduler-configmap", default=DEFAULT_CONFIGMAP, help="ConfigMap watched for configuration changes"
    )
    flag("--scheduler-configmap-namespace", default=DEFAULT_CONFIGMAP_NAMESPACE)
    flag("-v", "--v", dest="verbosity", type=_verbosity_arg, default=0, help="log verbosity (>= 4: debug)")
    flag("--log-format", choices=("json", "console"), default="json")
    bool_flag(
        "--dry-run", False, "shadow mode: decide and log what would be bound, write nothing, take no lease"
    )
    flag(
        "--drain-timeout",
        type=_duration_arg,
        default=10.0,
        help="how long SIGTERM waits for binds in flight (default 10s)",
    )
    flag(
        "--healthz-max-failed-sessions",
        type=int,
        default=5,
        help="/healthz fails after this many sessions in a row raised, so the kubelet restarts a "
        "stuck daemon (0 = never; default 5)",
    )
    flag("--version", action="store_true", help="print the version and exit")
    for name in _ACCEPTED_ONLY:
        p.add_argument(name, nargs="?", const="true", default=None, help=argparse.SUPPRESS)
    return p


def parse_args(argv: list[str]) -> Options:
    parser = build_parser()
    a = parser.parse_args(argv)
    names = a.scheduler_name or ["volcano"]
    selector: dict[str, set[str]] = {}
    for item in a.node_selector:
        for part in str(item).split(","):
            k, sep, v = part.partition(":")
            if not sep or not k.strip():
                parser.error(f"--node-selector {part!r}: expected key:value")
            selector.setdefault(k.strip(), set()).add(v.strip())
    if a.schedule_period <= 0:
        parser.error("--schedule-period must be positive")
    if a.leader_elect_resource_lock not in ("leases", "lease"):
        parser.error(
            f"--leader-elect-resource-lock {a.leader_elect_resource_lock!r}: only 'leases' is supported"
        )
    if a.leader_elect and not a.leader_elect_renew_deadline < a.leader_elect_lease_duration:
        parser.error("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration")
    notes = [
        f"flag {n} is accepted for compatibility and ignored: {why}"
        for n, why in _ACCEPTED_ONLY.items()
        if getattr(a, n.lstrip("-").replace("-", "_")) is not None
    ]
    return Options(
        scheduler_names=names,
        scheduler_conf=a.scheduler_conf,
        schedule_period=a.schedule_period,
        schedule_on_arrival=a.schedule_on_arrival,
        default_queue=a.default_queue,
        listen_address=a.listen_address,
        healthz_address=a.healthz_address,
        enable_healthz=a.enable_healthz,
        enable_metrics=a.enable_metrics,
        enable_web=a.enable_web,
        priority_class=a.priority_class,
        kubeconfig=a.kubeconfig,
        master=a.master,
        kube_api_qps=a.kube_api_qps,
        kube_api_burst=a.kube_api_burst,
        minimum_feasible_nodes=a.minimum_feasible_nodes,
        minimum_percentage_nodes_to_find=a.minimum_percentage_nodes_to_find,
        percentage_nodes_to_find=a.percentage_nodes_to_find,
        node_selector=selector,
        resource_sync_timeout=a.resource_sync_timeout,
        disable_default_scheduler_config=a.disable_default_scheduler_config,
        leader_elect=a.leader_elect,
        lease_duration=a.leader_elect_lease_duration,
        renew_deadline=a.leader_elect_renew_deadline,
        retry_period=a.leader_elect_retry_period,
        lease_namespace=a.leader_elect_resource_namespace or a.lock_object_namespace or "volcano-system",
        # Volcano names the lock after the scheduler when exactly one name is given
        lease_name=a.leader_elect_resource_name or (names[0] if len(names) == 1 else "volcano"),
        scheduler_configmap=a.scheduler_configmap,
        scheduler_configmap_namespace=a.scheduler_configmap_namespace,
        verbosity=a.verbosity,
        log_format=a.log_format,
        dry_run=a.dry_run,
        drain_timeout=a.drain_timeout,
        healthz_max_failed_sessions=max(0, a.healthz_max_failed_sessions),
        version=a.version,
        notes=notes,
    )

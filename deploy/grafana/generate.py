"""Writes vc-scheduler-dashboard.json (and the chart's copy): `python deploy/grafana/generate.py`.

The dashboard is generated so that every query uses a metric name from one list below, which
tests/deploy checks against what scheduler/metrics.py exports.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = [
    HERE / "vc-scheduler-dashboard.json",
    HERE.parent / "helm" / "vc-scheduler" / "dashboards" / "vc-scheduler-dashboard.json",
]
RATE = "$__rate_interval"

_next_id = iter(range(1, 1000))


def q(expr: str, legend: str) -> dict:
    return {
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "expr": expr,
        "legendFormat": legend,
        "refId": chr(ord("A") + len(legend) % 26),
    }


def panel(
    title: str,
    targets: list[dict],
    x: int,
    y: int,
    w: int = 12,
    h: int = 8,
    unit: str = "short",
    description: str = "",
    stack: bool = False,
) -> dict:
    for i, t in enumerate(targets):
        t["refId"] = chr(ord("A") + i)
    return {
        "id": next(_next_id),
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "custom": {"stacking": {"mode": "normal" if stack else "none"}, "fillOpacity": 10},
            },
            "overrides": [],
        },
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi"},
        },
        "targets": targets,
    }


def row(title: str, y: int) -> dict:
    return {
        "id": next(_next_id),
        "type": "row",
        "title": title,
        "collapsed": False,
        "gridPos": {"x": 0, "y": y, "w": 24, "h": 1},
        "panels": [],
    }


def quantiles(metric: str, by: str = "") -> list[dict]:
    group = f"le{', ' + by if by else ''}"
    return [
        q(
            f"histogram_quantile({p}, sum by ({group}) (rate({metric}_bucket[{RATE}])))",
            f"p{int(p * 100)}" + (f" {{{{{by}}}}}" if by else ""),
        )
        for p in (0.5, 0.9, 0.99)
    ]


def dashboard() -> dict:
    panels = [
        row("Scheduling", 0),
        panel(
            "Pods bound / s",
            [
                q(f"sum(rate(volcano_pods_bound_total[{RATE}]))", "bound"),
                q(f"sum by (code) (rate(volcano_bind_errors_total[{RATE}]))", "bind errors {{code}}"),
                q(f"sum(rate(volcano_dry_run_binds_total[{RATE}]))", "decided, not written (--dry-run)"),
            ],
            0,
            1,
            unit="ops",
            description="Bindings accepted by the API server (volcano_pods_bound_total), failed ones by HTTP code, and binds a --dry-run scheduler decided.",
        ),
        panel(
            "Session (e2e scheduling) latency",
            [
                *quantiles("volcano_e2e_scheduling_latency_milliseconds"),
                q(
                    f"histogram_quantile(0.99, sum by (le) (rate(volcano_open_session_duration_milliseconds_bucket[{RATE}])))",
                    "open session p99",
                ),
            ],
            12,
            1,
            unit="ms",
            description="One observation per scheduling cycle.",
        ),
        panel(
            "Action latency p99",
            [
                q(
                    f"histogram_quantile(0.99, sum by (le, action) (rate(volcano_action_scheduling_latency_milliseconds_bucket[{RATE}])))",
                    "{{action}}",
                ),
            ],
            0,
            9,
            unit="ms",
        ),
        panel(
            "Plugin latency p99",
            [
                q(
                    f"histogram_quantile(0.99, sum by (le, plugin, OnSession) (rate(volcano_plugin_scheduling_latency_milliseconds_bucket[{RATE}])))",
                    "{{plugin}} {{OnSession}}",
                ),
            ],
            12,
            9,
            unit="ms",
        ),
        panel(
            "Unschedulable jobs and tasks",
            [
                q("max(volcano_unschedule_job_count)", "unschedulable jobs"),
                q("topk(10, max by (job_id) (volcano_unschedule_task_count))", "{{job_id}} tasks"),
            ],
            0,
            17,
            description="Set by the gang plugin at the end of every session.",
        ),
        panel(
            "Evictions / s and leader",
            [
                q(
                    f"sum by (action) (rate(volcano_eviction_transactions_total[{RATE}]))",
                    "eviction transactions {{action}}",
                ),
                q(f"rate(volcano_total_preemption_attempts[{RATE}])", "preemption attempts"),
                q("max by (pod) (volcano_leader)", "leader {{pod}}"),
            ],
            12,
            17,
        ),
        panel(
            "Configuration reloads",
            [
                q(f"sum by (source) (increase(volcano_config_reloads_total[{RATE}]))", "accepted {{source}}"),
                q(
                    f"sum by (source) (increase(volcano_config_reload_failures_total[{RATE}]))",
                    "refused {{source}}",
                ),
            ],
            0,
            25,
            h=6,
            description="A refused configuration leaves the previous one in force; the log says why.",
        ),
        panel(
            "Sessions skipped / s",
            [
                q(
                    f"sum(rate(volcano_sessions_skipped_total[{RATE}]))",
                    "skipped (nothing changed, nothing pending)",
                ),
            ],
            12,
            25,
            h=6,
            unit="ops",
        ),
        row("Queues", 31),
        panel(
            "Queue CPU: allocated vs deserved",
            [
                q(
                    'max by (queue_name) (volcano_queue_allocated_milli_cpu{queue_name=~"$queue"}) / 1000',
                    "{{queue_name}} allocated",
                ),
                q(
                    'max by (queue_name) (volcano_queue_deserved_milli_cpu{queue_name=~"$queue"}) / 1000',
                    "{{queue_name}} deserved",
                ),
                q(
                    'max by (queue_name) (volcano_queue_real_capacity_milli_cpu{queue_name=~"$queue"} < 1e300) / 1000',
                    "{{queue_name}} real capacity",
                ),
            ],
            0,
            32,
            description="Cores. Deserved is proportion's water-filling share, or capacity's spec.deserved (above it a queue is borrowing, and reclaim may take it back). Real capacity (capacity plugin) is the most a queue may borrow up to; unlimited ones are not drawn.",
        ),
        panel(
            "Queue memory: allocated vs deserved",
            [
                q(
                    'max by (queue_name) (volcano_queue_allocated_memory_bytes{queue_name=~"$queue"})',
                    "{{queue_name}} allocated",
                ),
                q(
                    'max by (queue_name) (volcano_queue_deserved_memory_bytes{queue_name=~"$queue"})',
                    "{{queue_name}} deserved",
                ),
                q(
                    'max by (queue_name) (volcano_queue_real_capacity_memory_bytes{queue_name=~"$queue"} < 1e300)',
                    "{{queue_name}} real capacity",
                ),
            ],
            12,
            32,
            unit="bytes",
        ),
        panel(
            "Pending demand per queue (CPU requested, not allocated)",
            [
                q(
                    'max by (queue_name) (volcano_queue_request_milli_cpu{queue_name=~"$queue"} - volcano_queue_allocated_milli_cpu{queue_name=~"$queue"}) / 1000',
                    "{{queue_name}} pending",
                ),
                q(
                    'max by (queue_name) (volcano_queue_inqueue_milli_cpu{queue_name=~"$queue"}) / 1000',
                    "{{queue_name}} admitted, not running",
                ),
            ],
            0,
            40,
            description="Cores requested by the queue's pods that are not allocated (request - allocated), and minResources of admitted (Inqueue) PodGroups.",
        ),
        panel(
            "Queue share and overuse",
            [
                q('max by (queue_name) (volcano_queue_share{queue_name=~"$queue"})', "{{queue_name}} share"),
                q(
                    'max by (queue_name) (volcano_queue_overused{queue_name=~"$queue"})',
                    "{{queue_name}} overused",
                ),
            ],
            12,
            40,
        ),
        panel(
            "Queue scalar resources (GPUs): allocated vs deserved",
            [
                q(
                    'max by (queue_name, resource) (volcano_queue_allocated_scalar_resources{queue_name=~"$queue"})',
                    "{{queue_name}} {{resource}} allocated",
                ),
                q(
                    'max by (queue_name, resource) (volcano_queue_deserved_scalar_resources{queue_name=~"$queue"})',
                    "{{queue_name}} {{resource}} deserved",
                ),
            ],
            0,
            48,
            w=24,
            description="Milli-units (Volcano's convention), e.g. volcano.sh/vgpu-memory in MiB x 1000.",
        ),
        row("GPU sharing (deviceshare)", 56),
        panel(
            "vGPU memory allocated per card",
            [
                q(
                    'max by (NodeName, devID) (volcano_vgpu_device_allocated_memory{NodeName=~"$node"})',
                    "{{NodeName}} {{devID}}",
                ),
                q(
                    'max by (NodeName, devID) (volcano_vgpu_device_memory_limit{NodeName=~"$node"})',
                    "{{NodeName}} {{devID}} total",
                ),
            ],
            0,
            57,
            unit="mbytes",
        ),
        panel(
            "vGPU cores allocated per card",
            [
                q(
                    'max by (NodeName, devID) (volcano_vgpu_device_allocated_cores{NodeName=~"$node"})',
                    "{{NodeName}} {{devID}}",
                ),
            ],
            12,
            57,
            unit="percent",
        ),
        panel(
            "Pods sharing each card",
            [
                q(
                    'max by (NodeName, devID) (volcano_vgpu_device_shared_number{NodeName=~"$node"})',
                    "{{NodeName}} {{devID}}",
                ),
            ],
            0,
            65,
        ),
        panel(
            "vGPU memory allocated per node",
            [
                q(
                    'sum by (NodeName) (volcano_vgpu_device_allocated_memory{NodeName=~"$node"})',
                    "{{NodeName}}",
                ),
                q(
                    'sum by (NodeName) (volcano_vgpu_device_memory_limit{NodeName=~"$node"})',
                    "{{NodeName}} total",
                ),
            ],
            12,
            65,
            unit="mbytes",
        ),
    ]
    var = lambda name, query, label: {  # noqa: E731
        "name": name,
        "label": label,
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": query, "refId": name},
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "sort": 1,
    }
    return {
        "title": "vc-scheduler",
        "uid": "vc-scheduler",
        "description": "vc-scheduler (Volcano-compatible batch scheduler): throughput, latency, queues, GPU sharing.",
        "tags": ["vc-scheduler", "volcano", "scheduler"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "timezone": "",
        "graphTooltip": 1,
        "annotations": {"list": []},
        "links": [],
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Data source",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                    "refresh": 1,
                },
                var("queue", "label_values(volcano_queue_weight, queue_name)", "Queue"),
                var("node", "label_values(volcano_vgpu_device_memory_limit, NodeName)", "GPU node"),
            ]
        },
        "panels": panels,
    }


def main() -> None:
    text = json.dumps(dashboard(), indent=2) + "\n"
    for path in OUT:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

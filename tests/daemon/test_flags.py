"""Volcano's command line works unchanged; durations use Go syntax; bad flags are one clear line."""

from __future__ import annotations

import pytest

from scheduler import daemon
from scheduler.daemon import main, parse_args, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("500ms", 0.5),
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("300us", 0.0003),
        ("250µs", 0.00025),
        ("10ns", 1e-8),
        ("0", 0.0),
        ("2m", 120.0),
        ("-1s", -1.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("5", "missing unit"), ("1x", "invalid duration"), ("", "invalid duration"), ("s", "invalid duration")],
)
def test_bad_durations_say_why(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_duration(text)


def test_defaults_are_volcanos() -> None:
    o = parse_args([])
    assert o.scheduler_names == ["volcano"]
    assert o.schedule_period == 1.0
    assert o.default_queue == "default"
    assert o.listen_address == ":8080" and o.healthz_address == ":11251"
    assert not o.enable_metrics and not o.enable_healthz
    assert o.kube_api_qps == 2000 and o.kube_api_burst == 2000
    assert (o.minimum_feasible_nodes, o.minimum_percentage_nodes_to_find, o.percentage_nodes_to_find) == (
        100,
        5,
        0,
    )
    assert o.resource_sync_timeout == 60.0
    assert o.leader_elect is True
    assert (o.lease_duration, o.renew_deadline, o.retry_period) == (15.0, 10.0, 2.0)
    assert (o.lease_namespace, o.lease_name) == ("volcano-system", "volcano")
    assert o.priority_class is True
    assert o.log_format == "json" and not o.dry_run


def test_volcano_deployment_arguments() -> None:
    o = parse_args(
        [
            "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
            "--scheduler-name=volcano",
            "--schedule-period=500ms",
            "--enable-metrics=true",
            "--enable-healthz=true",
            "--leader-elect=false",
            "--kube-api-qps=50",
            "--kube-api-burst=100",
            "-v=4",
            "--leader-elect-lease-duration",
            "30s",
            "--leader-elect-renew-deadline=20s",
            "--leader-elect-retry-period=3s",
            "--minimum-feasible-nodes=10",
            "--percentage-nodes-to-find=50",
        ]
    )
    assert o.scheduler_conf == "/volcano.scheduler/volcano-scheduler.conf"
    assert o.schedule_period == 0.5
    assert o.enable_metrics and o.enable_healthz and not o.leader_elect
    assert (o.kube_api_qps, o.kube_api_burst) == (50.0, 100)
    assert o.verbosity == 4
    assert (o.lease_duration, o.renew_deadline, o.retry_period) == (30.0, 20.0, 3.0)
    assert (o.minimum_feasible_nodes, o.percentage_nodes_to_find) == (10, 50)


def test_bare_boolean_flags_mean_true() -> None:
    o = parse_args(["--enable-metrics", "--dry-run", "--leader-elect=false"])
    assert o.enable_metrics and o.dry_run and not o.leader_elect


def test_lease_is_named_after_the_only_scheduler_name() -> None:
    assert parse_args(["--scheduler-name=gpu"]).lease_name == "gpu"
    assert parse_args(["--scheduler-name=a", "--scheduler-name", "b"]).scheduler_names == ["a", "b"]
    assert parse_args(["--scheduler-name=a", "--scheduler-name=b"]).lease_name == "volcano"
    assert parse_args(["--leader-elect-resource-name=x", "--scheduler-name=a"]).lease_name == "x"


def test_lease_namespace_from_the_deprecated_flag_or_the_component_base_one() -> None:
    assert parse_args(["--lock-object-namespace=ns1"]).lease_namespace == "ns1"
    assert (
        parse_args(["--lock-object-namespace=ns1", "--leader-elect-resource-namespace=ns2"]).lease_namespace
        == "ns2"
    )


def test_node_selector_pairs() -> None:
    o = parse_args(
        ["--node-selector=volcano.sh/role:train", "--node-selector", "volcano.sh/role:serving,zone:a"]
    )
    assert o.node_selector == {"volcano.sh/role": {"train", "serving"}, "zone": {"a"}}


def test_volcano_only_flags_are_accepted_and_noted() -> None:
    o = parse_args(["--csi-storage=true", "--plugins-dir=/plugins", "--resync-period=0s", "--enable-pprof"])
    assert any("--plugins-dir" in n for n in o.notes)
    assert len(o.notes) == 4


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--schedule-period=5"], "missing unit"),
        (["--schedule-period=0s"], "must be positive"),
        (["--enable-metrics=maybe"], "invalid boolean"),
        (["--leader-elect-resource-lock=endpoints"], "only 'leases'"),
        (["--leader-elect-lease-duration=5s"], "renew-deadline must be shorter"),
        (["--node-selector=novalue"], "key:value"),
        (["--no-such-flag"], "unrecognized arguments"),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert "Traceback" not in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("vc-scheduler ")


def test_parser_is_exposed_for_deployment_checks() -> None:
    ns, unknown = daemon.build_parser().parse_known_args(
        ["--scheduler-conf=/x.conf", "--enable-healthz=true"]
    )
    assert ns.scheduler_conf == "/x.conf" and not unknown

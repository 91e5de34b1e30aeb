"""`triage` and `batch` after the result is written, through the real console entry point: --notify to a receiver
on 127.0.0.1 (up, down, or named by $CRASHCART_NOTIFY) and --fail-on's exit codes, over the bundled example job
and generated ones."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes.webhook import closed_port

from crashcart.evals.generator import JobSpec, generate_job
from crashcart.knowledge.taxonomy import FailureClass

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "xid79-job"
START = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def healthy_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated job that ends well: its verdict is unknown (nothing failed). No kernel log: its year-less stamps
    would be read as this year's, not START's, and the gap as a hang (a separate bug)."""
    out = tmp_path_factory.mktemp("healthy")
    spec = JobSpec(nodes=2, gpus_per_node=4, total_mb=0.1, scenario="none", seed=3, start=START, kernel_log=False)
    generate_job(out, spec)
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three generated jobs: an XID 79 and an IB link failure on node05 (infrastructure), and a code bug."""
    root = tmp_path_factory.mktemp("jobs")
    for seed, (name, scenario) in enumerate((("a", "xid79"), ("b", "ib_link"), ("c", "code_bug"))):
        generate_job(
            root / name,
            JobSpec(nodes=6, gpus_per_node=4, total_mb=0.3, scenario=scenario, fault_node=5, seed=seed, start=START),
        )
    return root


def _triage(cli, *args: str) -> tuple[int, dict, str]:
    code, out, err = cli("triage", str(EXAMPLE), "--no-memory", "--workers", "1", "--format", "json", *args)
    return code, json.loads(out) if out else {}, err


def test_triage_notifies_a_json_webhook_and_slack_and_the_report_is_unchanged(cli, webhook, slack_webhook) -> None:
    code, plain, err = _triage(cli)
    assert code == 0 and "notify" not in err
    code, report, err = _triage(cli, "--notify", webhook.url("json", "/ci"), "--notify", slack_webhook)
    assert code == 0 and "notify" not in err, err
    assert report["diagnosis"] == plain["diagnosis"]
    generic, slack = webhook.posts
    d = report["diagnosis"]
    assert generic.path == "/ci" and generic.body["title"].startswith(f"crashcart: {d['failure_class']} → ")
    first = d["evidence"][0]
    assert f"{first['file']}:{first['line']}: " in generic.body["message"]
    assert slack.path.startswith("/services/") and slack.body["attachments"][0]["title"] == generic.body["title"]


def test_a_receiver_that_is_down_is_one_stderr_line_and_the_result_and_exit_stand(cli, webhook) -> None:
    down = f"json://ci:t0ps3cret@127.0.0.1:{closed_port()}/hook"
    for fail_on, want in ((None, 0), ("gpu_hardware", 1)):
        extra = ("--fail-on", fail_on) if fail_on else ()
        code, report, err = _triage(cli, "--notify", down, "--notify", webhook.url("json", "/up"), *extra)
        assert code == want and report["diagnosis"]["failure_class"] == "gpu_hardware"
        [line] = [x for x in err.splitlines() if "notify" in x]
        assert line.startswith("crashcart: warning: notify json://ci:") and "127.0.0.1" in line and "failed" in line
        assert "t0ps3cret" not in err
    assert len(webhook.posts) == 2  # the channel that was up got both


def test_text_and_out_file_reports_are_written_before_a_failing_notify(cli, tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    down = f"json://127.0.0.1:{closed_port()}/hook"
    code, stdout, err = cli("triage", str(EXAMPLE), "--no-memory", "--workers", "1", "-o", str(out), "--notify", down)
    assert code == 0 and stdout == "" and "gpu_hardware" in out.read_text()
    assert err.count("crashcart: warning: notify") == 1


def test_crashcart_notify_names_the_channels_when_no_flag_does(cli, webhook, monkeypatch) -> None:
    monkeypatch.setenv("CRASHCART_NOTIFY", f"{webhook.url('json', '/one')} {webhook.url('json', '/two')}")
    code, _, _ = _triage(cli)
    assert code == 0 and [p.path for p in webhook.posts] == ["/one", "/two"]
    code, _, _ = _triage(cli, "--notify", webhook.url("json", "/flag"))
    assert code == 0 and webhook.posts[-1].path == "/flag" and len(webhook.posts) == 3


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [("gpu_hardware", 1), ("infra", 1), ("any", 1), ("code_bug,gpu_oom", 0), ("network,GPU_HARDWARE", 1)],
)
def test_triage_exit_code_follows_fail_on(cli, fail_on: str, code: int) -> None:
    got, report, _ = _triage(cli, "--fail-on", fail_on)
    assert got == code and report["diagnosis"]["failure_class"] == "gpu_hardware"


def test_a_job_that_ended_well_fails_only_on_unknown(cli, healthy_job: Path) -> None:
    for fail_on, want in (("any", 0), ("infra", 0), ("unknown", 1)):
        code, out, _ = cli("triage", str(healthy_job), "--no-memory", "-f", "json", "--fail-on", fail_on)
        assert json.loads(out)["diagnosis"]["failure_class"] == "unknown" and code == want, fail_on


@pytest.mark.parametrize("command", ["triage", "batch"])
def test_a_bad_fail_on_is_one_line_and_exit_2_before_any_work(cli, command: str, tree: Path) -> None:
    code, out, err = cli(command, str(EXAMPLE if command == "triage" else tree), "--fail-on", "infra,oom")
    assert code == 2 and out == ""
    assert err == (
        "crashcart: error: --fail-on: 'oom' is not a failure class; use infra, any, "
        + ", ".join(c.value for c in FailureClass)
        + "\n"
    )


def test_batch_exit_code_follows_any_jobs_verdict(cli, tree: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "b.db")
    for fail_on, want in (("code_bug", 1), ("infra", 1), ("storage,gpu_oom", 0), ("any", 1)):
        code, out, err = cli("batch", str(tree), "--results", db, "--workers", "2", "-f", "csv", "--fail-on", fail_on)
        assert code == want, (fail_on, err)
        assert out.count("\n") == 4  # the CSV is whole either way
    code, _, _ = cli("batch", str(tree), "--results", db, "-f", "csv")
    assert code == 0


def test_batch_notifies_its_summary(cli, tree: Path, tmp_path: Path, webhook) -> None:
    db = str(tmp_path / "b.db")
    down = f"json://127.0.0.1:{closed_port()}/down"
    code, out, err = cli(
        "batch", str(tree), "--results", db, "-f", "json", "--notify", webhook.url("json", "/b"), "--notify", down
    )
    assert code == 0
    summary = json.loads(out)["summary"]
    [post] = webhook.posts
    infra = summary["infrastructure"]
    hours = f" ({infra['gpu_hour_share']:.0%} of GPU-hours)" if summary["totals"]["gpu_hours"] else ""
    assert post.body["title"] == f"crashcart batch: 3 failed jobs, 2 of them infrastructure{hours}"
    body = post.body["message"].splitlines()
    assert body[0].startswith("3 jobs: 3 triaged, 0 errors, 0 without logs; ")
    assert body[1].startswith(f"infrastructure: {infra['jobs']} jobs ")
    assert body[-1] == "repeat-offender nodes (drain): node05 (2 jobs)"
    assert err.count("crashcart: warning: notify json://127.0.0.1:") == 1


def test_a_triage_that_notifies_nobody_never_imports_apprise_or_the_notice_builder() -> None:
    command = ["-m", "crashcart.cli", "triage", str(EXAMPLE), "--no-memory", "-f", "json"]
    run = subprocess.run([sys.executable, "-X", "importtime", *command], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time")}
    assert "crashcart.cli_outcome" in imported and not {"apprise", "crashcart.notify"} & imported

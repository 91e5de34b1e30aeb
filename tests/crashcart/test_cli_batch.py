"""`crashcart batch` through the real console entry point: formats, resume, stores, Slurm wiring, errors."""

from __future__ import annotations

import csv
import io
import json
import sys
import types
from datetime import datetime, timezone
from pathlib import Path

import pytest

from crashcart import cli as cli_module
from crashcart.batch.models import BatchJob
from crashcart.cli_batch import batch
from crashcart.evals.generator import JobSpec, generate_job

START = datetime(2025, 3, 1, 8, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def batch_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Register the command if crashcart/cli.py does not yet, and keep every default store inside tmp_path."""
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in cli_module.app.registered_commands}
    if "batch" not in names:
        cli_module.app.command("batch")(batch)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    for var in ("CRASHCART_MEMORY", "CRASHCART_RULES", "CRASHCART_BATCH_RESULTS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three jobs; node05 is named faulty by two infrastructure failures (a repeat offender)."""
    root = tmp_path_factory.mktemp("jobs")
    for seed, (name, scenario) in enumerate((("a", "xid79"), ("b", "ib_link"), ("c", "code_bug"))):
        generate_job(root / "2025-03" / name, JobSpec(nodes=6, gpus_per_node=4, total_mb=0.4, scenario=scenario,
                                                      fault_node=5, seed=seed, start=START))
    return root


def test_json_csv_and_markdown_agree_and_a_rerun_resumes(cli, tree: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "b.db")
    code, out, err = cli("batch", str(tree), "--results", db, "--workers", "2", "--format", "json")
    assert code == 0, err
    data = json.loads(out)  # stdout holds the JSON alone: the progress bar and the headline go to stderr
    summary, results = data["summary"], data["results"]
    assert {r["job"]["job_id"]: r["diagnosis"]["failure_class"] for r in results} == {
        "2025-03/a": "gpu_hardware", "2025-03/b": "network", "2025-03/c": "code_bug"}
    [offender] = summary["offenders"]
    assert (offender["node"], offender["jobs"]) == ("node05", 2)
    hours = sum(r["job"]["gpus"] * r["job"]["elapsed_s"] / 3600 for r in results[:2])
    assert summary["infrastructure"]["gpu_hours"] == pytest.approx(hours, abs=1e-3)
    assert summary["totals"]["new_jobs"] == 3 and "3 new, 0 unchanged" in err and "jobs/min" in err

    code, out, err = cli("batch", str(tree), "--results", db, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and "0 new, 3 unchanged" in err
    from_json = [(r["job"]["job_id"], r["diagnosis"]["failure_class"], " ".join(r["diagnosis"]["faulty_nodes"]))
                 for r in results]
    assert [(r["job_id"], r["class"], r["faulty_nodes"]) for r in rows] == from_json

    md_file = tmp_path / "out" / "report.md"
    md_file.parent.mkdir()
    code, out, _ = cli("batch", str(tree), "--results", db, "--format", "md", "--out", str(md_file))
    md = md_file.read_text()
    assert code == 0 and out == ""
    assert "`scontrol update NodeName=node05 State=DRAIN" in md
    share = summary["infrastructure"]["gpu_hour_share"] * 100
    assert f"| infrastructure | 2 | 66.7% | {hours:,.1f} | {share:.1f}% |" in md

    code, out, _ = cli("batch", str(tree), "--results", db)
    assert code == 0 and "Repeat offenders" in out and "node05" in out


def test_memory_store_reaches_the_workers(cli, tmp_path: Path) -> None:
    """An incident confirmed in memory decides a job the rules cannot: the store is opened inside each worker."""
    line = "2026-03-01 10:00:09 CRITICAL zeta-scheduler: giving up on step {s} after quorum loss on host {h}\n"
    seen = tmp_path / "seen.log"
    seen.write_text(line.format(s=100, h="gpu-a17") * 3)
    job = tmp_path / "tree" / "j1"
    job.mkdir(parents=True)
    (job / "out.log").write_text(line.format(s=2301, h="gpu-b02") * 3)
    (job / "job.json").write_text('{"gpus": 8, "elapsed_s": 3600, "state": "FAILED"}')
    mem = str(tmp_path / "mem.db")
    assert cli("cases", "add", str(seen), "--class", "node_failure", "--memory", mem)[0] == 0
    code, out, err = cli("batch", str(tmp_path / "tree"), "--results", str(tmp_path / "r.db"), "--memory", mem,
                         "-f", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["results"][0]["diagnosis"]["decided_by"] == "memory"
    assert data["results"][0]["job"]["state"] == "FAILED"
    assert [d["jobs"] for d in data["summary"]["deciders"]] == [0, 1, 0, 0]


def test_slurm_jobs_come_from_the_slurm_module(cli, tree: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    asked: dict = {}
    none = types.SimpleNamespace(slurm_jobs=lambda **kw: asked.update(kw) or [])
    monkeypatch.setitem(sys.modules, "crashcart.batch.slurm", none)
    code, out, _ = cli("batch", "--slurm", "--results", str(tmp_path / "s.db"))
    assert code == 0 and "0 jobs" in out  # no failed job is an answer, not an error
    assert asked == {"since": None, "until": None}  # the Slurm module's default states apply
    asked.clear()

    def slurm_jobs(**kw) -> list[BatchJob]:
        asked.update(kw)
        logs = sorted((tree / "2025-03" / "a" / "logs").iterdir())
        return [BatchJob(job_id="4242", state="NODE_FAIL", gpus=48, elapsed_s=7200, log_paths=logs)]

    monkeypatch.setitem(sys.modules, "crashcart.batch.slurm", types.SimpleNamespace(slurm_jobs=slurm_jobs))
    code, out, err = cli("batch", "--slurm", "--since", "now-7days", "--states", "FAILED, NODE_FAIL",
                         "--results", str(tmp_path / "s.db"), "-f", "csv")
    assert code == 0, err
    assert asked == {"since": "now-7days", "until": None, "states": ["FAILED", "NODE_FAIL"]}
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert (row["job_id"], row["state"], row["class"], row["gpu_hours"]) == ("4242", "NODE_FAIL", "gpu_hardware",
                                                                            "96.0")


@pytest.mark.parametrize(("args", "message"), [
    ([], "give a ROOT folder of job folders, or --slurm"),
    (["{tree}", "--slurm"], "(not both)"),
    (["{tree}", "--since", "2025-01-01"], "--since, --until and --states go with --slurm"),
    (["{tmp}/missing"], "missing is not a folder: give the root of a tree"),
    (["{tree}", "--memory", "{tmp}/nope.db"], "no store at {tmp}/nope.db: fix --memory"),
    (["{tree}", "--rules", "{tmp}/nope.db"], "no store at {tmp}/nope.db: fix --rules"),
    (["{tree}", "--results", "{tmp}"], "cannot open as a batch result store"),
])
def test_errors_are_one_line_and_exit_2(cli, tree: Path, tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = cli("batch", *[a.format(tree=tree, tmp=tmp_path) for a in args])
    assert code == 2 and out == ""
    assert err.startswith("crashcart: error: ") and message.format(tmp=tmp_path) in err and err.count("\n") == 1

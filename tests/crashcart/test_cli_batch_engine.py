"""`crashcart batch --engine dask` through the real console entry point, on a local Dask cluster of 2 workers."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_jobs import START, fifty_jobs
from proctree import kill_when

from crashcart.batch import engines
from crashcart.evals.generator import JobSpec, generate_job

REPO = Path(__file__).resolve().parents[2]
TIMING = ("wall_s", "jobs_per_min", "mb_per_s", "seconds")  # what differs between two runs of the same batch


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 50 generated jobs, and one whose only file is binary (its triage raises: an `error` result)."""
    root = fifty_jobs(tmp_path_factory.mktemp("jobs"))
    (root / "broken" / "logs").mkdir(parents=True)
    (root / "broken" / "logs" / "core.dump").write_bytes(bytes(range(256)) * 64)
    return root


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One local cluster of 2 worker processes for the whole module, as `--address` names an existing one."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.CRITICAL,
    ) as cluster:
        yield cluster.scheduler_address


def _batch(cli, jobs: Path, db: Path, *extra: str) -> tuple[dict[str, Any], str]:
    code, out, err = cli("batch", str(jobs), "--results", str(db), "--format", "json", "--no-memory", *extra)
    assert code == 0, err
    return json.loads(out), err


def _answers(data: dict[str, Any]) -> dict[str, tuple]:
    return {
        r["job"]["job_id"]: (r["status"], r["error"], r["diagnosis"] and r["diagnosis"]["failure_class"])
        + (r["diagnosis"] and tuple(r["diagnosis"]["faulty_nodes"]),)
        for r in data["results"]
    }


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    summary = dict(data["summary"])
    summary["totals"] = {k: v for k, v in summary["totals"].items() if k not in TIMING}
    return summary


def test_the_engine_gives_the_local_pools_answers_and_a_rerun_reuses_every_result(
    cli, jobs: Path, scheduler: str, tmp_path: Path
) -> None:
    local, _ = _batch(cli, jobs, tmp_path / "local.db", "--workers", "2")
    on_dask, err = _batch(cli, jobs, tmp_path / "dask.db", "--engine", "dask", "--address", scheduler)
    assert "51 new, 0 unchanged" in err
    answers = _answers(on_dask)
    assert answers == _answers(local) and len(answers) == 51
    assert len({a[2] for a in answers.values()}) >= 9  # every scenario's class, not one answer fifty times
    assert answers["broken"][0] == "error" and "core.dump: binary: not text" in answers["broken"][1]
    assert _summary(on_dask) == _summary(local) and on_dask["summary"]["offenders"]

    again, err = _batch(cli, jobs, tmp_path / "dask.db", "--engine", "dask", "--address", scheduler)
    assert "0 new, 51 unchanged" in err
    assert again["results"] == on_dask["results"]  # the stored results as they were, triaged_at and all


def test_a_worker_store_that_cannot_be_opened_stops_the_batch_with_one_line(
    cli, jobs: Path, scheduler: str, tmp_path: Path
) -> None:
    """A run-wide error travels back from a worker and stops the batch, and no job keeps it as its result."""
    broken = tmp_path / "incidents.db"
    broken.write_bytes(b"not a database\n" * 64)
    args = ["--results", str(tmp_path / "b.db"), "--format", "json", "--engine", "dask", "--address", scheduler]
    code, out, err = cli("batch", str(jobs), "--memory", str(broken), *args)
    assert (code, out) == (2, "")
    assert err.startswith("crashcart: error: batch stopped at job ") and err.count("\n") == 1
    assert "cannot open the stores: " in err


def test_without_dask_the_engine_names_the_extra_in_one_line(
    cli, jobs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import now fails, installed or not
    code, out, err = cli("batch", str(jobs), "--results", str(tmp_path / "b.db"), "--engine", "dask")
    assert (code, out) == (2, "")
    assert err == "crashcart: error: --engine dask needs Dask, which is not installed: pip install 'crashcart[dask]'\n"


def test_an_address_without_an_engine_or_with_no_scheduler_is_one_line(
    cli, jobs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "b.db")
    code, _, err = cli("batch", str(jobs), "--results", db, "--address", "tcp://127.0.0.1:1")
    assert code == 2 and err == "crashcart: error: --address names an engine's scheduler: give --engine dask with it\n"
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT_S", 1)
    code, _, err = cli("batch", str(jobs), "--results", db, "--engine", "dask", "--address", "tcp://127.0.0.1:1")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("crashcart: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1: ")


def test_a_batch_without_an_engine_never_imports_dask(jobs: Path, tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom crashcart import cli\n"
        f"sys.argv = ['crashcart', 'batch', {str(jobs / 'cluster')!r}, '--results', {str(tmp_path / 'b.db')!r}, "
        "'--workers', '2', '--format', 'json', '--no-memory']\n"
        "try:\n    cli.main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "[]" and json.loads(done.stdout)["summary"]["totals"]["jobs"] == 50


def test_a_batch_killed_with_sigkill_leaves_no_dask_worker(tmp_path: Path) -> None:
    """kill -9 runs no cleanup in the driver: the local cluster's worker processes must notice and end."""
    for seed in range(4):  # each keeps a worker busy for seconds, so the kill lands mid-triage
        generate_job(tmp_path / f"job{seed}", JobSpec(nodes=4, total_mb=20, scenario="xid79", seed=seed, start=START))
    cmd = [str(Path(sys.executable).with_name("crashcart")), "batch", str(tmp_path), "--workers", "2"]
    cmd += ["--engine", "dask", "--results", str(tmp_path / "b.db"), "--format", "json", "-o", str(tmp_path / "o")]

    def workers_started(pid: int, members: dict[int, int]) -> bool:  # the resource tracker and two workers
        return sum(1 for p in members.values() if p == pid) >= 3

    recorded, left = kill_when(cmd, workers_started)
    assert len(recorded) >= 4, recorded
    assert left == [], f"still running after the batch was killed: {left} of {recorded}"


def test_dask_is_an_extra_that_the_dev_install_pulls_in() -> None:
    """A plain install never installs Dask; `.[dev]` (CI's install) does, so the engine's tests run there."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {d.split("[")[0].split(">")[0].split("=")[0].strip() for d in project["dependencies"]}
    assert not names & {"dask", "distributed"}
    assert {d.split(">")[0] for d in project["optional-dependencies"]["dask"]} == {"dask", "distributed"}
    assert "crashcart[dask]" in project["optional-dependencies"]["dev"]

"""crashcart/batch/tree.py: which folders are jobs, which files are their logs, and what they cost."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crashcart.batch.tree import discover_jobs, read_meta
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.knowledge.errors import InputError

START = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


def _write(path: Path, text: str = "2025-03-01 10:00:00 INFO step 1 loss 2.0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_generated_jobs_take_gpus_nodes_and_elapsed_from_the_manifest(tmp_path: Path) -> None:
    made = generate_job(
        tmp_path / "team" / "a",
        JobSpec(nodes=3, gpus_per_node=4, total_mb=0.2, scenario="ecc", fault_node=1, start=START, hostname="gpu-{}"),
    )
    generate_job(tmp_path / "team" / "b", JobSpec(nodes=2, total_mb=0.2, scenario="ecc", seed=2))  # no start
    a, b = discover_jobs(tmp_path)
    assert (a.job_id, b.job_id) == ("team/a", "team/b")
    assert (a.gpus, a.nodes) == (12, ["gpu-0", "gpu-1", "gpu-2"])
    assert made.fault_time is not None
    assert a.elapsed_s == pytest.approx((made.fault_time - START).total_seconds())
    assert a.end == made.fault_time and a.gpu_hours == pytest.approx(12 * a.elapsed_s / 3600)
    assert sorted(p.name for p in a.log_paths) == sorted(Path(f.name).name for f in made.files)
    assert all(p.parent.name == "logs" for p in a.log_paths)  # manifest.json is never a log
    assert (b.gpus, b.elapsed_s) == (16, 0.0)  # the manifest has no start: elapsed unknown


def test_job_json_gives_metadata_and_is_not_a_log(tmp_path: Path) -> None:
    job = tmp_path / "runs" / "gpt-7b"
    _write(job / "node01.log")
    _write(job / "ranks" / "rank_3.out")
    _write(job / ".hidden.log")
    _write(job / "model.pt", "not a log")
    (job / "job.json").write_text(
        json.dumps(
            {
                "name": "gpt",
                "state": "NODE_FAIL",
                "nodes": ["node01", "node02"],
                "gpus": 16,
                "start": "2025-03-01T08:00:00Z",
                "end": "2025-03-01T10:30:00Z",
                "exit_code": "1:0",
            }
        )
    )
    (job / "manifest.json").write_text(json.dumps({"spec": {"nodes": 99, "gpus_per_node": 8}}))  # job.json wins
    [j] = discover_jobs(tmp_path)
    assert (j.job_id, j.name, j.state, j.gpus, j.elapsed_s, j.exit_code) == (
        "runs/gpt-7b",
        "gpt",
        "NODE_FAIL",
        16,
        9000.0,
        "1:0",
    )
    assert j.gpu_hours == 40.0
    assert [p.relative_to(job).as_posix() for p in j.log_paths] == ["node01.log", "ranks/rank_3.out"]


def test_job_json_marks_a_job_whose_logs_are_in_per_node_folders(tmp_path: Path) -> None:
    _write(tmp_path / "j1" / "node01" / "train.log")
    _write(tmp_path / "j1" / "node02" / "train.log")
    (tmp_path / "j1" / "job.json").write_text('{"gpus": 16, "elapsed_s": 60}')
    [j] = discover_jobs(tmp_path)
    assert (j.job_id, len(j.log_paths), j.elapsed_s) == ("j1", 2, 60.0)


def test_a_logs_folder_makes_a_job_even_when_empty(tmp_path: Path) -> None:
    (tmp_path / "dead" / "logs").mkdir(parents=True)
    (tmp_path / "nothing_here").mkdir()  # a folder without logs or metadata is not a job
    [j] = discover_jobs(tmp_path)
    assert (j.job_id, j.log_paths) == ("dead", [])


def test_the_root_is_a_job_only_when_nothing_below_is(tmp_path: Path) -> None:
    _write(tmp_path / "slurm-1.out")
    [j] = discover_jobs(tmp_path)
    assert j.job_id == "." and [p.name for p in j.log_paths] == ["slurm-1.out"]
    _write(tmp_path / "sub" / "x.log")
    assert [j.job_id for j in discover_jobs(tmp_path)] == ["sub"]  # loose files in the root are not a job then


def test_a_foreign_manifest_gives_no_metadata(tmp_path: Path) -> None:
    _write(tmp_path / "j" / "a.log")
    (tmp_path / "j" / "manifest.json").write_text('{"version": 3, "files": []}')
    [j] = discover_jobs(tmp_path)
    assert (j.gpus, j.elapsed_s, [p.name for p in j.log_paths]) == (0, 0.0, ["a.log"])


@pytest.mark.parametrize(
    "spec",
    [
        {"nodes": 2, "hostname": "{0.x}"},  # AttributeError
        {"nodes": 2, "hostname": "{0[x]}"},  # TypeError
        {"nodes": 2, "hostname": "{1}"},  # IndexError
        {"nodes": 10**12},  # a billion names would not fit in memory
    ],
)
def test_a_manifest_whose_spec_makes_no_host_names_gives_none(tmp_path: Path, spec: dict) -> None:
    _write(tmp_path / "j" / "a.log")
    (tmp_path / "j" / "manifest.json").write_text(json.dumps({"spec": spec}))
    [j] = discover_jobs(tmp_path)
    assert (j.job_id, j.nodes, j.metadata_error) == ("j", [], None)


def test_an_invalid_job_json_is_that_jobs_error_and_the_others_go_on(tmp_path: Path) -> None:
    _write(tmp_path / "good" / "a.log")
    (tmp_path / "good" / "job.json").write_text('{"gpus": 8}')
    _write(tmp_path / "j" / "a.log")
    for text, message in [
        ('{"gpus": -4}', r"j/job.json: invalid job metadata at gpus: .*fix it"),
        ('{"gpu": 4}', "at gpu: Extra inputs"),
        ("{not json", "invalid job metadata"),
        ('{"nodes": {"node01": 8}}', "at nodes: "),  # neither a list of hosts nor a count
    ]:
        (tmp_path / "j" / "job.json").write_text(text)
        good, bad = discover_jobs(tmp_path)
        assert (good.job_id, good.gpus, good.metadata_error) == ("good", 8, None)
        assert bad.job_id == "j" and [p.name for p in bad.log_paths] == ["a.log"]
        assert bad.metadata_error is not None and re.search(message, bad.metadata_error), bad.metadata_error
    with pytest.raises(InputError, match="at gpus: "):  # read_meta itself still raises
        (tmp_path / "j" / "job.json").write_text('{"gpus": -4}')
        read_meta(tmp_path / "j")


def test_a_start_without_a_zone_and_an_end_with_one_still_give_the_elapsed_time(tmp_path: Path) -> None:
    _write(tmp_path / "j" / "a.log")
    (tmp_path / "j" / "job.json").write_text('{"start": "2025-03-01T08:00:00", "end": "2025-03-01T10:30:00Z"}')
    [j] = discover_jobs(tmp_path)  # a naive time is read as UTC, as everywhere in this module
    assert (j.elapsed_s, j.metadata_error) == (9000.0, None)


def test_nodes_in_job_json_may_be_a_count(tmp_path: Path) -> None:
    _write(tmp_path / "j" / "a.log")
    (tmp_path / "j" / "job.json").write_text('{"nodes": 4, "gpus": 32}')  # sacct's NNodes: a count, no names
    [j] = discover_jobs(tmp_path)
    assert (j.nodes, j.gpus, j.metadata_error) == ([], 32, None)


def test_errors_name_the_root(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a folder: give the root"):
        discover_jobs(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no job folders under .*empty: a job folder holds log files"):
        discover_jobs(tmp_path / "empty")

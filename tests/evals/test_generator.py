"""evals/generator.py (with evals/scenarios.py, logtext.py, logends.py): small jobs, checked line by line."""

from __future__ import annotations

import gzip
import json
import re
from datetime import datetime
from pathlib import Path

import pytest
import zstandard
from pydantic import ValidationError

from crashcart.evals.generator import LOGS, MANIFEST, JobSpec, generate_job
from crashcart.evals.scenarios import SCENARIOS, Scenario, scenario_from_case
from crashcart.knowledge.taxonomy import FailureClass

WATCHDOG = "Watchdog caught collective operation timeout"
# c10's stamp as PyTorch 2.4+ prints it: month unpadded, nanoseconds (`[E626 06:24:44.903881913 `)
GLOG = re.compile(r"\[E(\d{1,2})(\d\d) (\d\d:\d\d:\d\d)\.(\d{6})\d{3} ")


def _job(tmp_path: Path, name: str = "job", workers: int = 1, **kw) -> tuple[Path, object]:
    spec = JobSpec(**{"nodes": 4, "total_mb": 2, "scenario": "xid79", "fault_node": 2, "seed": 5, **kw})
    out = tmp_path / name
    return out, generate_job(out, spec, workers=workers)


def _read(path: Path) -> str:
    return path.read_text()


def _glog_times(text: str, needle: str) -> list[datetime]:
    return [
        datetime.strptime(f"{int(m.group(1)):02d}{m.group(2)} {m.group(3)}.{m.group(4)}", "%m%d %H:%M:%S.%f")
        for line in text.splitlines()
        if needle in line and (m := GLOG.search(line))
    ]


def test_per_node_layout_files_and_manifest(tmp_path: Path) -> None:
    out, job = _job(tmp_path)
    names = sorted(p.name for p in (out / LOGS).iterdir())
    assert names[:8] == [*(f"kernel-node0{i}.log" for i in range(4)), *(f"node0{i}.log" for i in range(4))]
    assert len(names) == 9 and re.fullmatch(r"slurm-\d+\.out", names[8])
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["failure_class"] == "gpu_hardware"
    assert manifest["faulty_node"] == "node02"
    assert manifest["faulty_rank"] // 8 == 2
    assert any("GPU has fallen off the bus" in e for e in manifest["evidence"])
    assert "seconds" not in manifest
    for f in manifest["files"]:
        assert (out / f["name"]).stat().st_size == f["bytes"] == f["uncompressed_bytes"]
    assert manifest["total_bytes"] == sum(f["bytes"] for f in manifest["files"])
    assert 0.8 * 2e6 <= manifest["uncompressed_bytes"] <= 1.2 * 2e6


def test_megatron_lines_look_real(tmp_path: Path) -> None:
    out, _ = _job(tmp_path)
    text = _read(out / LOGS / "node00.log")
    iteration = (
        r"^\[default7\]: \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration +\d+/ +\d+ \| consumed samples:"
        r" +\d+ \| elapsed time per iteration \(ms\): [\d.]+ \|.* lm loss: \d\.\d{6}E[+-]\d\d \|"
    )
    assert re.search(iteration, text, re.M)
    assert "  micro_batch_size ................................ 1" in text  # rank 0's args dump
    assert re.search(r"^\[default0\]:node00:\d+:\d+ \[0\] NCCL INFO Bootstrap : Using ib0:", text, re.M)
    losses = re.findall(r"lm loss: (\S+) \|", text)
    assert len(set(losses)) > 0.9 * len(losses)  # values vary line to line


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    a, _ = _job(tmp_path, "a")
    b, _ = _job(tmp_path, "b")
    c, _ = _job(tmp_path, "c", seed=6)
    assert (a / MANIFEST).read_text() == (b / MANIFEST).read_text()
    for path in (a / LOGS).iterdir():
        assert path.read_bytes() == (b / LOGS / path.name).read_bytes()
    assert (a / LOGS / "node00.log").read_bytes() != (c / LOGS / "node00.log").read_bytes()


def test_parallel_parts_give_the_same_bytes(tmp_path: Path) -> None:
    one, _ = _job(tmp_path, "one", layout="slurm")
    two, _ = _job(tmp_path, "two", workers=2, layout="slurm")
    for path in (one / LOGS).iterdir():
        assert path.read_bytes() == (two / LOGS / path.name).read_bytes()
    assert not [p for p in (two / LOGS).iterdir() if ".part" in p.name]


def test_root_only_on_fault_node_and_first_in_time(tmp_path: Path) -> None:
    out, _ = _job(tmp_path)
    logs = out / LOGS
    root = "NCCL WARN Cuda failure 'unknown error'"
    for i in range(4):
        node = _read(logs / f"node0{i}.log")
        kernel = _read(logs / f"kernel-node0{i}.log")
        assert (root in node) == (i == 2)
        assert ("GPU has fallen off the bus" in kernel) == (i == 2)
        ranks = set(re.findall(r"\[Rank (\d+)\] " + WATCHDOG, node))
        assert ranks == (set() if i == 2 else {str(r) for r in range(8 * i, 8 * i + 8)})
    fault_at = min(_glog_times(_read(logs / "node02.log"), "CUDA error: unknown error"))
    symptoms = [t for i in (0, 1, 3) for t in _glog_times(_read(logs / f"node0{i}.log"), WATCHDOG)]
    assert symptoms and fault_at < min(symptoms)
    assert 60 < (min(symptoms) - fault_at).total_seconds() < 3600  # minutes later


def test_slurm_layout_labels_and_time_order(tmp_path: Path) -> None:
    out, job = _job(tmp_path, layout="slurm", scenario="gpu_oom")
    (slurm,) = [p for p in (out / LOGS).iterdir() if p.name.startswith("slurm-")]
    lines = _read(slurm).splitlines()
    assert any(line.startswith("2: [default7]: [") and " iteration " in line for line in lines)
    root = next(i for i, line in enumerate(lines) if "torch.OutOfMemoryError" in line)
    assert lines[root].startswith("2: [default")
    first_symptom = next(i for i, line in enumerate(lines) if WATCHDOG in line)
    assert root < first_symptom
    assert lines[-1].startswith("srun: error: node03: task 3: Exited with exit code 1")
    assert job.failure_class == FailureClass.GPU_OOM


def test_per_rank_layout_without_torchrun_prefix(tmp_path: Path) -> None:
    out, job = _job(tmp_path, layout="per_rank", torchrun_prefix=False, kernel_log=False, scenario="host_oom")
    names = {p.name for p in (out / LOGS).iterdir()}
    assert {f"rank_{r}.out" for r in range(32)} <= names and len(names) == 33
    slurm = _read(next((out / LOGS).glob("slurm-*.out")))
    assert re.search(
        r"^\w{3} [ \d]\d \d\d:\d\d:\d\d node02 kernel: \[ *\d+\.\d{6}\] Out of memory: Killed process"
        r" \d+ \(python\)",
        slurm,
        re.M,
    )
    assert "failed (exitcode: -9)" in slurm and "oom_kill event" in slurm
    assert not _read(out / LOGS / "rank_31.out").startswith("[default")
    assert 0.8 * 2e6 <= job.uncompressed_bytes <= 1.2 * 2e6


def _decompress(path: Path) -> bytes:
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes())
    with zstandard.ZstdDecompressor().stream_reader(path.open("rb"), read_across_frames=True) as fh:
        return fh.read()


@pytest.mark.parametrize("compression,suffix", [("gzip", ".gz"), ("zstd", ".zst")])
def test_compressed_outputs_decompress_to_the_same_text(tmp_path: Path, compression: str, suffix: str) -> None:
    plain, _ = _job(tmp_path, "plain", layout="slurm")
    packed, job = _job(tmp_path, "packed", workers=2, layout="slurm", compression=compression)  # 2 parts joined
    for f in job.files:
        assert f.name.endswith(suffix)
        raw = _decompress(packed / f.name)
        assert raw == (plain / f.name.removesuffix(suffix)).read_bytes()
        assert len(raw) == f.uncompressed_bytes


def test_healthy_run_has_no_failure(tmp_path: Path) -> None:
    out, job = _job(tmp_path, scenario="none")
    text = "".join(_read(p) for p in (out / LOGS).iterdir())
    assert job.failure_class is None and job.faulty_node is None and job.evidence == []
    for s in SCENARIOS.values():
        for needle in s.evidence:
            assert needle not in text
    assert "ChildFailedError" not in text and "Traceback" not in text
    assert "Local worker group finished (WorkerState.SUCCEEDED)" in text


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_generates_its_evidence(tmp_path: Path, name: str) -> None:
    out, job = _job(tmp_path, scenario=name, nodes=2, fault_node=1, total_mb=0.5)
    text = "".join(_read(p) for p in (out / LOGS).iterdir())
    assert "{" + "rank}" not in text and "{node}" not in text  # every placeholder filled
    for needle in SCENARIOS[name].evidence:
        assert needle in text
    assert len(job.evidence) == len(SCENARIOS[name].evidence)


def test_node_failure_stops_the_node_and_slurm_names_it(tmp_path: Path) -> None:
    out, job = _job(tmp_path, scenario="node_fail")
    node = _read(out / LOGS / "node02.log")
    last = re.findall(r" iteration +(\d+)/", node)[-1]
    assert int(last) == job.iterations  # it logged up to the fault, then nothing: no teardown, no error
    assert node.splitlines()[-1].startswith("[default")
    assert "ChildFailedError" not in node and "Traceback" not in node
    assert "srun: error: Node failure on node02" in _read(next((out / LOGS).glob("slurm-*.out")))
    assert "Received Signals.SIGTERM death signal" in _read(out / LOGS / "node00.log")
    assert job.faulty_node == "node02"


def test_job_wide_fault_names_no_node(tmp_path: Path) -> None:
    out, job = _job(tmp_path, scenario="nan_loss")
    assert job.faulty_node is None and job.failure_class == FailureClass.LOSS_DIVERGENCE
    for i in range(4):
        assert "lm loss: nan" in _read(out / LOGS / f"node0{i}.log")


def test_scenario_from_case_injects_verbatim(tmp_path: Path) -> None:
    case = tmp_path / "case.log"
    case.write_text("RuntimeError: CUDA error: an illegal memory access {was} encountered\n")
    scenario = scenario_from_case(case, "cuda_error", evidence=["illegal memory access"])
    out, job = _job(tmp_path, scenario=scenario)
    node = _read(out / LOGS / "node02.log")
    assert "\nRuntimeError: CUDA error: an illegal memory access {was} encountered\n" in node
    assert job.failure_class == FailureClass.CUDA_ERROR and job.scenario == "case:case"
    assert job.evidence == ["RuntimeError: CUDA error: an illegal memory access {was} encountered"]


def test_bad_specs_and_templates_say_what_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="fault_node 4 is not a node of a 4-node job"):
        JobSpec(nodes=4, total_mb=1, fault_node=4)
    with pytest.raises(ValidationError, match="unknown scenario 'xid80'"):
        JobSpec(nodes=4, total_mb=1, scenario="xid80")
    with pytest.raises(ValidationError, match="duplicate names"):
        JobSpec(nodes=4, total_mb=1, hostname="node")
    with pytest.raises(ValidationError, match="extra"):
        JobSpec(nodes=4, total_mb=1, fault_nodes=[1])
    with pytest.raises(ValidationError, match="unknown placeholder"):
        Scenario(name="x", failure_class=None, root_lines=["{hostname} died"])


def test_refuses_a_foreign_folder_but_regenerates_its_own(tmp_path: Path) -> None:
    out, _ = _job(tmp_path, layout="per_rank")
    _, job = _job(tmp_path, layout="slurm")  # same folder: the old files go
    assert sorted(p.name for p in (out / LOGS).iterdir()) == sorted(Path(f.name).name for f in job.files)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        generate_job(tmp_path / "other", JobSpec(nodes=1, total_mb=0.1))

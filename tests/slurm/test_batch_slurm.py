"""`crashcart batch --slurm` against a real Slurm 22.05: jobs that fail in known ways, found and triaged.

All jobs are submitted at once (the node has room for all of them), so the suite waits about as long as the
slowest one: the TIMEOUT job, ~60-90 s since slurmctld checks time limits every 30 s. NODE_FAIL kills every
job on the node, so it runs last, alone. Set CRASHCART_SLURM_RECORD=DIR to save the real sacct/scontrol
output the offline tests (tests/crashcart/test_batch_slurm_parse.py) replay.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from cluster import SlurmCluster  # tests/slurm/cluster.py (put on sys.path by conftest.py)

from crashcart.api import triage
from crashcart.batch.models import BatchJob
from crashcart.batch.sacct import SACCT_FIELDS, parse_sacct
from crashcart.batch.slurm import job_log_paths, slurm_job_logs, slurm_jobs
from crashcart.batch.slurm_paths import derived_paths

# Read at import: tests/conftest.py clears CRASHCART_* before each test runs.
RECORD_DIR = os.environ.get("CRASHCART_SLURM_RECORD", "")
TERMINAL = {
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
}

GPU_OOM_LOG = """\
iteration      120/  10000 | consumed samples: 30720 | elapsed time per iteration (ms): 812.4 | lm loss: 3.214E+00
Traceback (most recent call last):
  File "/opt/train/pretrain_gpt.py", line 211, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB \
of which 1.06 GiB is free. Of the allocated memory 74.12 GiB is allocated by PyTorch.
"""
NCCL_STDOUT = """\
node07:1234:1290 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.7<0>
iteration      300/  10000 | consumed samples: 76800 | lm loss: 2.981E+00
"""
NCCL_STDERR = """\
node07:1234:1290 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.8<44206> with \
status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid ::ffff:10.0.0.7 remoteGids ::ffff:10.0.0.8
torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was \
a network error, NCCL version 2.21.5
ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
"""
CODE_BUG_LOG = """\
Traceback (most recent call last):
  File "/opt/train/data.py", line 88, in collate
    batch["labels"] = sample["label_ids"]
KeyError: 'label_ids'
"""
ITERATIONS = "iteration 10/10000 | lm loss: 5.1E+00\niteration 20/10000 | lm loss: 4.8E+00\n"


def _script(body: str, directives: str = "") -> str:
    return f'#!/bin/bash\n{directives}echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"\n{body}'


def _print(text: str, stream: str = "") -> str:
    return f"cat {stream}<<'LOG'\n{text}LOG\n"


def _sacct_rows(cluster: SlurmCluster, ids: list[str]) -> dict[str, list[dict[str, str]]]:
    out = cluster.run("sacct", "-X", "-P", "-n", "-j", ",".join(ids), "-o", "JobID,State,JobName,WorkDir").stdout
    rows: dict[str, list[dict[str, str]]] = {}
    for line in out.splitlines():
        job_id, state, name, work_dir = line.split("|")
        rows.setdefault(job_id.split("_")[0], []).append({"state": state.split()[0], "name": name, "dir": work_dir})
    return rows


def wait_done(cluster: SlurmCluster, ids: dict[str, str], timeout: float, counts: dict[str, int] | None = None) -> None:
    """Poll sacct until every job is terminal and its name/WorkDir are final (22.05 first shows `allocation`)."""
    deadline = time.monotonic() + timeout
    counts = counts or {}
    while True:
        rows = _sacct_rows(cluster, list(ids.values()))
        pending = [
            n
            for n, i in ids.items()
            if len(rows.get(i, [])) < counts.get(n, 1)
            or any(r["state"] not in TERMINAL or r["name"] == "allocation" or not r["dir"] for r in rows[i])
        ]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs not finished in sacct after {timeout:.0f}s: {pending} {rows}")
        time.sleep(0.5)


def wait_state(cluster: SlurmCluster, job_id: str, state: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while cluster.run("squeue", "-h", "-j", job_id, "-o", "%T", check=False).stdout.strip() != state:
        assert time.monotonic() < deadline, f"job {job_id} not {state} after {timeout:.0f}s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def submitted(slurm_cluster: SlurmCluster) -> dict[str, str]:
    """Every job of the module, submitted at once; the TIMEOUT one first since it takes longest."""
    c = slurm_cluster
    jobs = c.root / "jobs"
    (jobs / "logs").mkdir(parents=True, exist_ok=True)
    (jobs / "cancel").mkdir(exist_ok=True)
    ids = {"since": (datetime.now() - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%S")}
    ids["timeout"] = c.sbatch(
        _script(_print(ITERATIONS) + "sleep 600\n"), "-J", "train-timeout", "--time=1", "--gres=gpu:1"
    )
    ids["gpu_oom"] = c.sbatch(
        _script(_print(GPU_OOM_LOG) + "sleep 2\nexit 1\n"),
        "-J",
        "train-oom",
        "--gres=gpu:h100:2",
        "-o",
        "logs/%x-%j.out",
    )
    nccl_directives = "#SBATCH --output=%x_%j.out\n#SBATCH --error=%x_%j.err\n#SBATCH --gpus=4\n#SBATCH -J train-nccl\n"
    ids["nccl"] = c.sbatch(
        _script(_print(NCCL_STDOUT) + _print(NCCL_STDERR, ">&2 ") + "sleep 2\nexit 1\n", nccl_directives)
    )
    ids["array"] = c.sbatch(_script(_print(CODE_BUG_LOG) + "exit 3\n"), "-J", "train-array", "-a", "1-2")
    ids["cancel"] = c.sbatch(
        _script(_print(ITERATIONS) + "sleep 600\n"),
        "-J",
        "train-cancel",
        f"--comment={jobs / 'cancel'}",
        "-o",
        "cancel/slurm-%j.out",
    )
    ids["host_oom"] = c.sbatch(
        _script("echo loading dataset shards into memory\npython3 -c 'b = b\"x\" * (512 * 2**20); print(len(b))'\n"),
        "-J",
        "data-oom",
        "--mem=64M",
        "-o",
        "host-%N-%u-%j.log",
    )
    ids["never_ran"] = c.sbatch(_script("exit 0\n"), "-J", "never-ran", "--begin=now+3600")
    ids["ok"] = c.sbatch(_script(_print(ITERATIONS)), "-J", "train-ok")
    c.run("scancel", ids["never_ran"])
    wait_state(c, ids["cancel"], "RUNNING")
    time.sleep(1)  # let it print
    c.run("scancel", ids["cancel"])
    return ids


@pytest.fixture(scope="module")
def quick(slurm_cluster: SlurmCluster, submitted: dict[str, str]) -> dict[str, BatchJob]:
    """The failed jobs except TIMEOUT, as slurm_jobs finds them (the TIMEOUT job is still running)."""
    names = ("gpu_oom", "nccl", "array", "cancel", "host_oom", "never_ran", "ok")
    began = time.perf_counter()
    wait_done(slurm_cluster, {n: submitted[n] for n in names}, timeout=60, counts={"array": 2})
    print(f"\nquick jobs done in sacct after {time.perf_counter() - began:.1f}s")
    return {job.job_id: job for job in slurm_jobs(since=submitted["since"])}


def test_finds_failed_jobs_with_states_nodes_gpus(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    ids, node = submitted, slurm_cluster.node
    expect = {
        ids["gpu_oom"]: ("train-oom", "FAILED", "1:0", 2),
        ids["nccl"]: ("train-nccl", "FAILED", "1:0", 4),
        f"{ids['array']}_1": ("train-array", "FAILED", "3:0", 0),
        f"{ids['array']}_2": ("train-array", "FAILED", "3:0", 0),
        ids["cancel"]: ("train-cancel", "CANCELLED", "0:0", 0),
        ids["never_ran"]: ("never-ran", "CANCELLED", "0:0", 0),
    }
    got = {j: (quick[j].name, quick[j].state, quick[j].exit_code, quick[j].gpus) for j in expect if j in quick}
    assert got == expect
    assert ids["ok"] not in quick  # COMPLETED is not a failure
    for job_id in set(expect) - {ids["never_ran"]}:
        assert quick[job_id].nodes == [node]
        assert quick[job_id].start is not None and quick[job_id].end is not None
    assert quick[ids["never_ran"]].nodes == [] and quick[ids["never_ran"]].log_paths == []
    assert 2 <= quick[ids["gpu_oom"]].elapsed_s <= 30
    assert quick[ids["gpu_oom"]].gpu_hours == pytest.approx(2 * quick[ids["gpu_oom"]].elapsed_s / 3600)


def test_gpu_count_matches_what_the_job_saw(submitted, quick) -> None:
    for name in ("gpu_oom", "nccl"):
        job = quick[submitted[name]]
        seen = job.log_paths[0].read_text().splitlines()[0]  # the script's first line: CUDA_VISIBLE_DEVICES=0,1
        assert len(seen.split("=", 1)[1].split(",")) == job.gpus


def test_log_paths_from_each_source(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    jobs, ids = slurm_cluster.root / "jobs", submitted
    assert quick[ids["gpu_oom"]].log_paths == [jobs / "logs" / f"train-oom-{ids['gpu_oom']}.out"]  # -o, command line
    assert quick[ids["nccl"]].log_paths == [
        jobs / f"train-nccl_{ids['nccl']}.out",
        jobs / f"train-nccl_{ids['nccl']}.err",
    ]  # #SBATCH lines
    assert quick[ids["cancel"]].log_paths == [jobs / "cancel"]  # --comment holds a folder
    array_logs = [p for i in (1, 2) for p in quick[f"{ids['array']}_{i}"].log_paths]
    assert array_logs == [jobs / f"slurm-{ids['array']}_{i}.out" for i in (1, 2)]  # default for an array


def test_derivation_agrees_with_slurm(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    """With no scontrol and no comment, SubmitLine and the stored #SBATCH lines lead to the files Slurm wrote."""
    names = ["gpu_oom", "nccl", "array"]
    text = slurm_cluster.run(
        "sacct", "-P", "-n", "-X", "-j", ",".join(submitted[n] for n in names), "-o", ",".join(SACCT_FIELDS)
    ).stdout
    rows = parse_sacct(text)
    assert len(rows) == len(names) + 1  # two array tasks

    def stored_script(job_id: str) -> str:
        return slurm_cluster.run("sacct", "--batch-script", "-j", job_id).stdout.split("\n", 2)[2]

    for row in rows:
        assert job_log_paths(row, None, stored_script) == quick[row.job_id].log_paths, row.job_id
    nccl = next(r for r in rows if r.name == "train-nccl")
    assert derived_paths(nccl) == [slurm_cluster.root / "jobs" / f"slurm-{nccl.job_id}.out"]  # no #SBATCH: a guess


def test_triage_names_the_failure(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    expect = {"gpu_oom": "gpu_oom", "nccl": "network", "cancel": "cancelled"}
    got = {name: triage(quick[submitted[name]].log_paths).diagnosis.failure_class.value for name in expect}
    assert got == expect
    assert triage(quick[f"{submitted['array']}_1"].log_paths).diagnosis.failure_class.value == "code_bug"


def test_out_of_memory_job(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    """`--mem=64M` and a 512 MB allocation: killed by the cgroup, OUT_OF_MEMORY, and the log says so."""
    if not slurm_cluster.oom_enforced:
        pytest.skip("no writable cgroup v1 memory hierarchy: Slurm cannot enforce --mem here, so no OUT_OF_MEMORY")
    job_id = submitted["host_oom"]
    job = quick[job_id]
    assert (job.name, job.state, job.exit_code, job.nodes) == (
        "data-oom",
        "OUT_OF_MEMORY",
        "0:125",
        [slurm_cluster.node],
    )
    expected = slurm_cluster.root / "jobs" / f"host-{slurm_cluster.node}-root-{job_id}.log"  # -o host-%N-%u-%j.log
    assert job.log_paths == [expected]
    row = parse_sacct(slurm_cluster.run("sacct", "-P", "-n", "-X", "-j", job_id, "-o", ",".join(SACCT_FIELDS)).stdout)
    assert derived_paths(row[0]) == [expected]  # %N and %u expanded as slurmstepd did
    assert "oom-kill event" in expected.read_text()
    assert triage(job.log_paths).diagnosis.failure_class.value == "host_oom"


def test_slurm_job_logs_for_the_bot(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    assert slurm_job_logs(submitted["gpu_oom"]) == quick[submitted["gpu_oom"]].log_paths
    assert slurm_job_logs(f"{submitted['array']}_2") == quick[f"{submitted['array']}_2"].log_paths
    assert slurm_job_logs(submitted["ok"])[0].read_text().startswith("CUDA_VISIBLE_DEVICES=")


def test_crashcart_mcp_triages_a_real_slurm_job(slurm_cluster: SlurmCluster, submitted, quick) -> None:
    """`crashcart mcp` started as a subprocess, driven by the mcp SDK's client: a job id is found through this
    cluster's sacct and scontrol, its logs read under the log root, and a job outside the root refused."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    job = submitted["gpu_oom"]
    root = quick[job].log_paths[0].parent  # jobs/logs: the nccl job writes beside it, outside this root
    argv = [sys.executable, "-m", "crashcart.cli", "mcp", "--log-root", str(root)]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))

    async def talk() -> list:
        async with Client(params, read_timeout_seconds=120) as client:
            return [await client.call_tool("triage_slurm_job", {"job_id": j}) for j in (job, submitted["nccl"])]

    found, outside = asyncio.run(talk())
    assert not found.is_error, found.content
    assert found.structured_content["diagnosis"]["failure_class"] == "gpu_oom"
    assert found.structured_content["paths"] == [str(p) for p in quick[job].log_paths]
    assert outside.is_error and "is outside the log roots crashcart may read" in outside.content[0].text


def test_hostlist_expansion_matches_scontrol(slurm_cluster: SlurmCluster) -> None:
    from crashcart.batch.hostlist import expand_hostlist

    for text in ("node[01-03,07]", "gpu-a[1-2]-b[3-4]", "a,b[8-11],c[099-101]", "rack1-n[1-2],x"):
        assert expand_hostlist(text) == slurm_cluster.run("scontrol", "show", "hostnames", text).stdout.split()


@pytest.fixture(scope="module")
def timed_out(slurm_cluster: SlurmCluster, submitted: dict[str, str], quick) -> str:
    """Every job of `submitted` finished, the TIMEOUT one included (60-90 s after it started)."""
    began = time.perf_counter()
    wait_done(slurm_cluster, {"timeout": submitted["timeout"]}, timeout=150)
    print(f"\nTIMEOUT reached sacct {time.perf_counter() - began:.1f}s after the quick jobs")
    return submitted["timeout"]


def test_timeout_job(slurm_cluster: SlurmCluster, submitted, timed_out) -> None:
    job = {j.job_id: j for j in slurm_jobs(since=submitted["since"], states=["TIMEOUT"])}[submitted["timeout"]]
    assert (job.state, job.gpus, job.nodes) == ("TIMEOUT", 1, [slurm_cluster.node])
    assert 60 <= job.elapsed_s <= 130
    assert job.log_paths == [slurm_cluster.root / "jobs" / f"slurm-{submitted['timeout']}.out"]
    assert "DUE TO TIME LIMIT" in job.log_paths[0].read_text()
    assert triage(job.log_paths).diagnosis.failure_class.value == "cancelled"
    _record(slurm_cluster, submitted)


def test_run_batch_over_slurm_jobs(submitted, timed_out, tmp_path: Path) -> None:
    """The batch runner triages what slurm_jobs found: a class per job, `no_logs` for the job that never ran."""
    from crashcart.batch.results import ResultStore
    from crashcart.batch.runner import run_batch

    jobs = slurm_jobs(since=submitted["since"])
    with ResultStore(tmp_path / "results.db") as store:
        results = {r.job.job_id: r for r in run_batch(jobs, results=store, workers=2)}
    classes = {job_id: r.diagnosis.failure_class.value for job_id, r in results.items() if r.diagnosis}
    assert classes[submitted["gpu_oom"]] == "gpu_oom"
    assert classes[submitted["nccl"]] == "network"
    assert classes[submitted["timeout"]] == "cancelled"
    assert results[submitted["never_ran"]].status == "no_logs"
    assert results[submitted["timeout"]].job.gpu_hours > 0


def test_cli_batch_slurm(submitted, timed_out, cli, tmp_path: Path) -> None:
    from crashcart.cli import app

    if "batch" not in {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}:
        pytest.skip("`crashcart batch` is not registered in crashcart/cli.py yet")
    code, out, err = cli(
        "batch",
        "--slurm",
        "--since",
        submitted["since"],
        "--format",
        "json",
        "--no-memory",
        "--results",
        str(tmp_path / "results.db"),
        "--workers",
        "2",
    )
    assert code == 0, err
    results = {r["job"]["job_id"]: r for r in json.loads(out)["results"]}
    assert results[submitted["gpu_oom"]]["diagnosis"]["failure_class"] == "gpu_oom"
    assert results[submitted["timeout"]]["job"]["state"] == "TIMEOUT"
    assert results[submitted["never_ran"]]["status"] == "no_logs"


def test_node_fail(slurm_cluster: SlurmCluster, submitted, timed_out) -> None:
    """Last and alone (after `timed_out`): taking the node down kills every job on it."""
    c = slurm_cluster
    job_id = c.sbatch(
        _script(_print(ITERATIONS) + "sleep 600\n"), "-J", "train-nodefail", "--gres=gpu:8", "--no-requeue"
    )  # else Slurm requeues it and the NODE_FAIL record is replaced
    wait_state(c, job_id, "RUNNING")
    time.sleep(1)
    c.run("scontrol", "update", f"nodename={c.node}", "state=down", "reason=crashcart-test")
    try:
        wait_done(c, {"nodefail": job_id}, timeout=30)
    finally:  # slurmd still answers, so ReturnToService=2 may have brought the node back already
        c.run("scontrol", "update", f"nodename={c.node}", "state=resume", check=False)
    job = {j.job_id: j for j in slurm_jobs(since=submitted["since"])}[job_id]
    assert (job.state, job.gpus, job.nodes) == ("NODE_FAIL", 8, [c.node])
    assert job.log_paths == [c.root / "jobs" / f"slurm-{job_id}.out"]
    assert "DUE TO NODE FAILURE" in job.log_paths[0].read_text()
    assert triage(job.log_paths).diagnosis.failure_class.value == "node_failure"
    _record(c, submitted, "nodefail")


def _record(cluster: SlurmCluster, submitted: dict[str, str], suffix: str = "") -> None:
    """With CRASHCART_SLURM_RECORD=DIR, save the real outputs the offline tests replay."""
    target = RECORD_DIR
    if not target:
        return
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    fmt = ",".join(SACCT_FIELDS)
    states = "FAILED,NODE_FAIL,TIMEOUT,OUT_OF_MEMORY,CANCELLED"
    name = f"sacct_failed{'_' + suffix if suffix else ''}.txt"
    (out / name).write_text(
        cluster.run(
            "sacct",
            "--parsable2",
            "--noheader",
            "--allocations",
            "--starttime",
            submitted["since"],
            "--endtime",
            "now",
            "--state",
            states,
            "--format",
            fmt,
        ).stdout
    )
    if suffix:
        return
    (out / "sacct_all_header.txt").write_text(
        cluster.run("sacct", "--parsable2", "--allocations", "--starttime", submitted["since"], "--format", fmt).stdout
    )
    (out / "scontrol_show_job.txt").write_text(cluster.run("scontrol", "--oneliner", "show", "job").stdout)
    (out / "sacct_batch_script.txt").write_text(
        cluster.run("sacct", "--batch-script", "--jobs", submitted["nccl"]).stdout
    )
    bad = cluster.run("sacct", "--starttime", "yesterday-ish", check=False)
    (out / "sacct_error.txt").write_text(f"exit {bad.returncode}\n{bad.stderr}")

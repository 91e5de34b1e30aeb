"""`crashcart batch` through the real console entry point: formats, resume, stores, Slurm wiring, errors."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from batch_jobs import START, three_jobs
from fakes.rule_rows import store_with_a_broken_rule
from fakes.slurm import Reply, recorded

from crashcart.batch.results import ResultStore
from crashcart.evals.generator import JobSpec, generate_job


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_jobs(tmp_path_factory.mktemp("jobs"))


def test_json_csv_and_markdown_agree_and_a_rerun_resumes(cli, tree: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "b.db")
    code, out, err = cli("batch", str(tree), "--results", db, "--workers", "2", "--format", "json")
    assert code == 0, err
    data = json.loads(out)  # stdout holds the JSON alone: the progress bar and the headline go to stderr
    summary, results = data["summary"], data["results"]
    assert {r["job"]["job_id"]: r["diagnosis"]["failure_class"] for r in results} == {
        "2025-03/a": "gpu_hardware",
        "2025-03/b": "network",
        "2025-03/c": "code_bug",
    }
    [offender] = summary["offenders"]
    assert (offender["node"], offender["jobs"]) == ("node05", 2)
    hours = sum(r["job"]["gpus"] * r["job"]["elapsed_s"] / 3600 for r in results[:2])
    assert summary["infrastructure"]["gpu_hours"] == pytest.approx(hours, abs=1e-3)
    assert summary["totals"]["new_jobs"] == 3 and "3 new, 0 unchanged" in err and "jobs/min" in err

    code, out, err = cli("batch", str(tree), "--results", db, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and "0 new, 3 unchanged" in err
    from_json = [
        (r["job"]["job_id"], r["diagnosis"]["failure_class"], " ".join(r["diagnosis"]["faulty_nodes"])) for r in results
    ]
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
    # a line no rule knows, Loghub's Zookeeper_2k.log (../shared/data), its peer id varied per job
    line = (
        "2015-07-29 19:13:24,282 - WARN  [RecvWorker:188978561024:QuorumCnxManager$RecvWorker@762] - "
        "Connection broken for id {s}, my id = {h}, error = \n"
    )
    seen = tmp_path / "seen.log"
    seen.write_text(line.format(s=100, h="1") * 3)
    job = tmp_path / "tree" / "j1"
    job.mkdir(parents=True)
    (job / "out.log").write_text(line.format(s=2301, h="3") * 3)
    (job / "job.json").write_text('{"gpus": 8, "elapsed_s": 3600, "state": "FAILED"}')
    mem = str(tmp_path / "mem.db")
    # a class that does not drain: one matching incident never drains a node on its own (agent/memory.py)
    assert cli("cases", "add", str(seen), "--class", "storage", "--memory", mem)[0] == 0
    code, out, err = cli(
        "batch", str(tmp_path / "tree"), "--results", str(tmp_path / "r.db"), "--memory", mem, "-f", "json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["results"][0]["diagnosis"]["decided_by"] == "memory"
    assert data["results"][0]["job"]["state"] == "FAILED"
    assert [d["jobs"] for d in data["summary"]["deciders"]] == [0, 0, 1, 0, 0]


GPU_OOM = (
    "iteration      120/  10000 | lm loss: 3.214E+00\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
    "79.10 GiB of which 1.06 GiB is free.\n"
)
NCCL_ERR = (
    "node07:1234:1290 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.8<44206> "
    "with status=12 opcode=129 len=65536 vendor err 129 (Recv)\n"
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or "
    "there was a network error, NCCL version 2.21.5\n"
)
XID_79 = (
    "iteration      300/  10000 | lm loss: 2.981E+00\n"
    "Apr 15 06:15:59 vm kernel: [269366.289309] NVRM: Xid (PCI:0000:1b:00): 79, pid=28536, name=python, "
    "GPU has fallen off the bus.\n"
)


def test_one_bad_job_json_never_sinks_the_batch(cli, tmp_path: Path) -> None:
    for name, meta in [
        ("count", '{"nodes": 2, "gpus": 16, "elapsed_s": 3600}'),  # a count of nodes: read, names no host
        ("broken", '{"nodes": {"node01": 8}, "gpus": 8}'),  # neither shape: this job's error
        ("plain", None),
    ]:
        (tmp_path / "tree" / name).mkdir(parents=True)
        (tmp_path / "tree" / name / "train.log").write_text(GPU_OOM)
        if meta is not None:
            (tmp_path / "tree" / name / "job.json").write_text(meta)
    code, out, err = cli("batch", str(tmp_path / "tree"), "--results", str(tmp_path / "r.db"), "-f", "json")
    assert code == 0, err
    results = {r["job"]["job_id"]: r for r in json.loads(out)["results"]}
    assert {k: r["status"] for k, r in results.items()} == {"broken": "error", "count": "ok", "plain": "ok"}
    assert "broken/job.json: invalid job metadata at nodes" in results["broken"]["error"]
    assert results["count"]["job"]["gpus"] == 16 and results["count"]["diagnosis"]["failure_class"] == "gpu_oom"
    code, out, _ = cli("batch", str(tmp_path / "tree"), "--results", str(tmp_path / "r.db"))
    assert code == 0 and "Not triaged" in out and "invalid job metadata" in out


def test_slurm_jobs_come_from_sacct(cli, tmp_path: Path, slurm_stubs) -> None:
    """The real crashcart.batch.slurm, against sacct/scontrol stubs replaying what Slurm 22.05 printed."""
    slurm_stubs.stub("sacct", "")  # no job ended in the window
    slurm_stubs.stub("scontrol", "")
    code, out, _ = cli("batch", "--slurm", "--results", str(tmp_path / "s.db"))
    assert code == 0 and "0 jobs" in out  # no failed job is an answer, not an error
    [argv] = slurm_stubs.calls("sacct")
    opt = dict(zip(argv[3::2], argv[4::2], strict=True))  # after --parsable2 --noheader --allocations
    assert argv[:3] == ["--parsable2", "--noheader", "--allocations"]
    assert (opt["--endtime"], opt["--state"]) == ("now", "FAILED,NODE_FAIL,TIMEOUT,OUT_OF_MEMORY,CANCELLED")
    since = datetime.fromisoformat(opt["--starttime"])  # the Slurm module's default window: the last day
    assert abs(datetime.now() - timedelta(days=1) - since) < timedelta(minutes=5)
    assert slurm_stubs.calls("scontrol") == []  # no rows: nothing to look up

    cluster = tmp_path / "slurm0"  # the recording cluster's folder, moved here
    jobs = cluster / "jobs"
    for rel, text in (
        ("logs/train-oom-17039282.out", GPU_OOM),
        ("train-nccl_17039283.err", NCCL_ERR),
        ("train-nccl_17039283.out", "iteration 300/10000 | lm loss: 2.981E+00\n"),
        ("slurm-17039290.out", XID_79),
    ):  # the array tasks' slurm-17039284_*.out are missing
        (jobs / rel).parent.mkdir(parents=True, exist_ok=True)
        (jobs / rel).write_text(text)
    slurm_stubs.stub(
        "sacct",
        {
            "--batch-script --jobs 17039283": recorded("sacct_batch_script.txt", cluster),
            "--batch-script": "",  # stored scripts of the other jobs: none
            "": recorded("sacct_failed_nodefail.txt", cluster),
        },
    )
    slurm_stubs.stub("scontrol", recorded("scontrol_show_job.txt", cluster))
    code, out, err = cli(
        "batch",
        "--slurm",
        "--since",
        "now-7days",
        "--states",
        "FAILED, NODE_FAIL",
        "--results",
        str(tmp_path / "s.db"),
        "-f",
        "csv",
    )
    assert code == 0, err
    first, *scripts = slurm_stubs.calls("sacct")
    assert (first[first.index("--starttime") + 1], first[first.index("--state") + 1]) == (
        "now-7days",
        "FAILED,NODE_FAIL",
    )
    assert scripts == [["--batch-script", "--jobs", job] for job in ("17039289", "17039284")]  # logs not found
    assert slurm_stubs.calls("scontrol") == [["--oneliner", "show", "job"]]
    rows = [
        (r["job_id"], r["state"], r["class"], r["faulty_nodes"], r["gpus"], r["gpu_hours"], r["status"])
        for r in csv.DictReader(io.StringIO(out))
    ]
    assert rows == [
        ("17039282", "FAILED", "gpu_oom", "", "2", "0.001", "ok"),  # scontrol's StdOut
        ("17039283", "FAILED", "network", "node07", "4", "0.002", "ok"),  # scontrol's StdOut and StdErr
        ("17039284_1", "FAILED", "", "", "0", "0.0", "no_logs"),
        ("17039284_2", "FAILED", "", "", "0", "0.0", "no_logs"),
        ("17039290", "NODE_FAIL", "gpu_hardware", "vm", "8", "0.002", "ok"),  # slurm-%j.out in WorkDir
    ]


def test_slurm_missing_or_failing_is_one_line_and_exit_2(
    cli, tmp_path: Path, slurm_stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_stubs.stub("sacct", Reply.recorded(recorded("sacct_no_config.txt")))  # a node with no slurm.conf
    code, out, err = cli("batch", "--slurm", "--results", str(tmp_path / "s.db"))
    assert (code, out) == (2, "")
    assert err == (
        "crashcart: error: sacct failed (exit 1): sacct: fatal: Could not establish a configuration "
        "source; check that `sacct` works on this node\n"
    )
    monkeypatch.setenv("PATH", str(tmp_path / "bin-without-slurm"))  # Slurm is not installed here
    code, out, err = cli("batch", "--slurm", "--results", str(tmp_path / "s.db"))
    assert (code, out, err) == (2, "", "crashcart: error: sacct not found: run on a Slurm login node or pass ROOT\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a ROOT folder of job folders, or --slurm"),
        (["{tree}", "--slurm"], "(not both)"),
        (["{tree}", "--since", "2025-01-01"], "--since, --until and --states go with --slurm"),
        (["{tmp}/missing"], "missing is not a folder: give the root of a tree"),
        (["{tree}", "--memory", "{tmp}/nope.db"], "no store at {tmp}/nope.db: fix --memory"),
        (["{tree}", "--rules", "{tmp}/nope.db"], "no store at {tmp}/nope.db: fix --rules"),
        (["{tree}", "--results", "{tmp}"], "cannot open as a batch result store"),
    ],
)
def test_errors_are_one_line_and_exit_2(cli, tree: Path, tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = cli("batch", *[a.format(tree=tree, tmp=tmp_path) for a in args])
    assert code == 2 and out == ""
    assert err.startswith("crashcart: error: ") and message.format(tmp=tmp_path) in err and err.count("\n") == 1


def test_a_store_no_worker_can_open_stops_the_batch_with_one_line(cli, tree: Path, tmp_path: Path) -> None:
    broken = tmp_path / "incidents.db"
    broken.write_bytes(b"not a database\n" * 64)
    results = tmp_path / "batch.db"
    code, out, err = cli("batch", str(tree), "--memory", str(broken), "--results", str(results), "--format", "json")
    assert (code, out) == (2, "")
    assert err.startswith("crashcart: error: batch stopped at job ") and err.count("\n") == 1
    assert "cannot open the stores: " in err and str(broken) in err
    code, out, _ = cli("batch", str(tree), "--results", str(results), "--format", "json")
    assert code == 0 and all(r["status"] == "ok" for r in json.loads(out)["results"])  # nothing stale was reused


def test_a_rule_store_that_cannot_be_opened_stops_the_batch_before_any_job(cli, tree: Path, tmp_path: Path) -> None:
    broken = tmp_path / "rules.db"
    broken.write_bytes(b"not a database\n" * 64)
    results = tmp_path / "batch.db"
    code, out, err = cli("batch", str(tree), "--rules", str(broken), "--results", str(results), "--format", "json")
    assert (code, out) == (2, "")
    assert err.startswith(f"crashcart: error: {broken}: cannot open as a rule store") and err.count("\n") == 1
    with ResultStore(results) as stored:
        assert stored.all() == []


def test_a_confirmed_rule_that_no_longer_compiles_is_one_warning_for_the_whole_batch(
    cli, tree: Path, tmp_path: Path
) -> None:
    store = store_with_a_broken_rule(tmp_path / "rules.db")
    results = tmp_path / "batch.db"
    code, out, err = cli("batch", str(tree), "--rules", str(store), "--results", str(results), "--format", "json")
    assert code == 0 and all(r["status"] == "ok" for r in json.loads(out)["results"])
    warnings = [line for line in err.splitlines() if line.startswith("crashcart: warning: ")]
    assert len(warnings) == 1 and "skipped confirmed rule user.prop-0123456789: " in warnings[0]


def test_names_that_are_not_utf8_and_a_tree_1000_deep_are_triaged_and_stored(cli, tmp_path: Path) -> None:
    """Issue 9: a non-UTF-8 name crashed the batch (0 results stored); a job 1,000 folders down crashed it too."""
    import os

    root = tmp_path / "jobs"
    odd = Path(os.fsdecode(bytes(root) + b"/r\xffn"))
    generate_job(odd, JobSpec(nodes=2, gpus_per_node=4, total_mb=0.1, scenario="xid79", seed=1, start=START))
    first = sorted((odd / "logs").iterdir())[0]
    first.rename(first.with_name(os.fsdecode(b"caf\xe9-" + os.fsencode(first.name))))
    deep = root / "deep"
    deep.mkdir()
    for _ in range(1000):  # os.walk and the job search recursed once a level
        deep /= "d"
        deep.mkdir()
    generate_job(deep, JobSpec(nodes=2, gpus_per_node=4, total_mb=0.1, scenario="code_bug", seed=2, start=START))
    db = str(tmp_path / "b.db")
    try:
        code, out, err = cli("batch", str(root), "--results", db, "--workers", "1", "--format", "json")
        assert code == 0, err
        results = {r["job"]["job_id"]: r for r in json.loads(out)["results"]}
        assert results["r\\xffn"]["status"] == "ok" and len(results) == 2
        assert any("caf\\xe9-" in p for p in results["r\\xffn"]["job"]["log_paths"])
        assert len(ResultStore(db)) == 2
    finally:  # pytest's clean-up (shutil.rmtree) recurses once a level too: the deep tree goes here
        for path in _deepest_first(root / "deep"):
            path.unlink() if path.is_file() else path.rmdir()


def _deepest_first(top: Path) -> list[Path]:
    """Every path under top, each before the folder that holds it, found without recursion."""
    out: list[Path] = []
    stack = [top]
    while stack:
        folder = stack.pop()
        out.append(folder)
        for entry in folder.iterdir():
            (stack if entry.is_dir() and not entry.is_symlink() else out).append(entry)
    return out[::-1]


def test_the_drain_command_prints_whole_at_60_columns() -> None:
    """People copy the drain command from the terminal: outside the table, never wrapped, whatever the width."""
    import importlib.util

    from rich.console import Console

    from crashcart.batch.render import drain_lines, to_table
    from crashcart.batch.summary import summarise

    spec = importlib.util.spec_from_file_location(
        "batch_summary_cases", Path(__file__).with_name("test_batch_summary.py")
    )
    assert spec is not None and spec.loader is not None
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    summary = summarise(cases.RESULTS)
    console = Console(width=60, record=True, color_system=None)
    console.print(to_table(summary, drains=False))
    assert "scontrol" not in console.export_text()  # not in a table, where it would wrap
    assert drain_lines(summary)[-1] == summary.offenders[0].drain
    assert len(summary.offenders[0].drain) > 60  # so this test means something at 60 columns


def test_the_headline_counts_in_the_right_number() -> None:
    from crashcart.batch.render import headline
    from crashcart.batch.summary import Totals

    fields = {name: 0 for name in Totals.model_fields} | {"jobs": 1, "errors": 1}
    line = headline(Totals.model_validate(fields))
    assert line.startswith("1 job: 0 triaged, 1 error, ") and "1 errors" not in line

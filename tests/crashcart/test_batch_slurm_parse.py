"""crashcart/batch/{slurm,sacct,slurm_paths,hostlist}.py without Slurm: recorded real output, replayed.

tests/slurm/recorded/*.txt is what a real Slurm 22.05 printed for the jobs tests/slurm/test_batch_slurm.py
submits (re-record with CRASHCART_SLURM_RECORD=tests/slurm/recorded; the job ids and RECORDED_ROOT below then
change). sacct_no_config.txt is `sacct -X` on a node with no slurm.conf (exit status first, then stderr).
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crashcart.batch.hostlist import expand_hostlist
from crashcart.batch.sacct import SacctRow, parse_sacct, tres_gpus
from crashcart.batch.slurm import (
    job_ended,
    job_log_paths,
    parse_scontrol,
    slurm_job_logs,
    slurm_job_state,
    slurm_jobs,
)
from crashcart.batch.slurm_paths import (
    comment_paths,
    derived_paths,
    expand_pattern,
    scontrol_paths,
    script_options,
    submit_line_options,
)
from crashcart.knowledge.errors import InputError

RECORDED = Path(__file__).resolve().parents[1] / "slurm" / "recorded"
RECORDED_ROOT = "/tmp/pytest-of-root/pytest-226/slurm0"  # where the recording cluster lived
JOBS = Path(RECORDED_ROOT) / "jobs"


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


def rows_by_name() -> dict[str, SacctRow]:
    rows = parse_sacct(recorded("sacct_failed_nodefail.txt"))
    return {r.job_id if r.name == "train-array" else r.name: r for r in rows}


# -- sacct --parsable2 ---------------------------------------------------------------------------------------


def test_parse_recorded_sacct() -> None:
    rows = parse_sacct(recorded("sacct_failed_nodefail.txt"))
    got = [(r.job_id, r.job_id_raw, r.name, r.state, r.exit_code, r.nodes, r.gpus, r.elapsed_s) for r in rows]
    assert got == [
        ("17039281", "17039281", "train-timeout", "TIMEOUT", "0:0", ["vm"], 1, 87),
        ("17039282", "17039282", "train-oom", "FAILED", "1:0", ["vm"], 2, 2),
        ("17039283", "17039283", "train-nccl", "FAILED", "1:0", ["vm"], 4, 2),
        ("17039285", "17039285", "train-cancel", "CANCELLED", "0:0", ["vm"], 0, 1),  # "CANCELLED by 0"
        ("17039286", "17039286", "data-oom", "OUT_OF_MEMORY", "0:125", ["vm"], 0, 0),
        ("17039287", "17039287", "never-ran", "CANCELLED", "0:0", [], 0, 0),  # NodeList "None assigned"
        ("17039284_1", "17039289", "train-array", "FAILED", "3:0", ["vm"], 0, 0),  # array task: raw id differs
        ("17039284_2", "17039284", "train-array", "FAILED", "3:0", ["vm"], 0, 0),
        ("17039290", "17039290", "train-nodefail", "NODE_FAIL", "0:0", ["vm"], 8, 1),
    ]
    timeout = rows[0]
    assert (timeout.start, timeout.end) == (datetime(2026, 12, 1, 7, 1, 13), datetime(2026, 12, 1, 7, 2, 40))
    assert timeout.submit_line == "sbatch --parsable -J train-timeout --time=1 --gres=gpu:1 job1.sh"
    assert rows[3].comment == f"{JOBS}/cancel"


def test_parse_skips_a_header_and_keeps_free_text_whole() -> None:
    assert [r.job_id for r in parse_sacct(recorded("sacct_all_header.txt"))][:2] == ["17039281", "17039282"]
    text = (
        "7|7|wrap|FAILED|2:0|ann|n[1-2]|gres/gpu:a100=4|5|Unknown|None|/w|logs=/w/a.log|"
        "sbatch --wrap grep x | sort\n"  # a pipe inside SubmitLine
        "8|8|two|FAILED|1:0|ann|n3|cpu=1|5|2026-01-01T00:00:00|2026-01-01T00:00:05|/w||sbatch --wrap echo a\n"
        "echo b\n"
    )  # a newline inside SubmitLine
    first, second = parse_sacct(text)
    assert (first.submit_line, first.nodes, first.gpus, first.start, first.end) == (
        "sbatch --wrap grep x | sort",
        ["n1", "n2"],
        4,
        None,
        None,
    )
    assert second.submit_line == "sbatch --wrap echo a\necho b"


def test_an_absurd_elapsed_time_is_no_time() -> None:
    # the second row above, its ElapsedRaw past int()'s 4,300 digits
    text = "8|8|two|FAILED|1:0|ann|n3|cpu=1|" + "9" * 5000 + "|Unknown|None|/w||sbatch --wrap echo a\n"
    assert [r.elapsed_s for r in parse_sacct(text)] == [0]


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("billing=1,cpu=1,gres/gpu:h100=2,gres/gpu=2,mem=256M,node=1", 2),  # recorded: typed and untyped both
        ("gres/gpu=8", 8),
        ("gres/gpu:h100=8", 8),
        ("gres/gpu:a100=2,gres/gpu:h100=4", 6),  # typed only: their sum
        ("gres/gpu:nvidia_h100_80gb_hbm3=8,node=1", 8),
        ("gres/gpumem=80G,gres/gpuutil=100", 0),  # other TRES that start with "gpu"
        ("billing=1,cpu=1,mem=256M,node=1", 0),
        ("", 0),
        ("gres/gpu=" + "9" * 5000, 0),  # past int()'s 4,300 digits: no count rather than a crash
    ],
)
def test_gpus_from_alloc_tres(tres: str, gpus: int) -> None:
    assert tres_gpus(tres) == gpus


# -- hostlists -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hostlist", "hosts"),
    [
        ("node[01-03,07]", ["node01", "node02", "node03", "node07"]),
        ("gpu-a[1-2]-b[3-4]", ["gpu-a1-b3", "gpu-a1-b4", "gpu-a2-b3", "gpu-a2-b4"]),
        ("a,b[8-11],c[099-101]", ["a", "b8", "b9", "b10", "b11", "c099", "c100", "c101"]),
        ("rack1-n[1-2],x", ["rack1-n1", "rack1-n2", "x"]),
        ("vm", ["vm"]),
        ("None assigned", []),
        ("", []),
    ],
)
def test_expand_hostlist(hostlist: str, hosts: list[str]) -> None:
    assert expand_hostlist(hostlist) == hosts  # tests/slurm checks the same table against `scontrol show hostnames`


@pytest.mark.parametrize(
    ("hostlist", "message"),
    [
        ("n[1-2", "unbalanced brackets in hostlist 'n[1-2'"),
        ("n[a-b]", "bad range 'a-b' in hostlist 'n[a-b]'"),
        ("n[3-1]", "descending range '3-1'"),
        ("n[1-99999999]", "names more than 100000 hosts"),
        ("n[1-" + "9" * 5000 + "]", "bad range"),  # past int()'s 4,300 digits
        ("n[1-100000][1-100000]", "names more than 100000 hosts"),  # refused before 10**10 names are made
        ("n[" + ",".join(["1-90000"] * 3) + "]", "names more than 100000 hosts"),
    ],
)
def test_bad_hostlists_name_the_text(hostlist: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        expand_hostlist(hostlist)


# -- output paths --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "pattern", "expanded"),
    [
        ("train-oom", "logs/%x-%j.out", "logs/train-oom-17039282.out"),
        ("data-oom", "host-%N-%u-%j.log", "host-vm-root-17039286.log"),  # what Slurm wrote (tests/slurm)
        ("17039284_1", "slurm-%A_%a.out", "slurm-17039284_1.out"),
        ("17039284_1", "%j %J %5a %b", "17039289 17039289 00001 1"),  # %j is the task's own id
        ("train-oom", "%A %a %J %s %t %n", "17039282 4294967294 17039282 batch 0 0"),  # measured on 22.05
        ("train-oom", "100%%-%q", "100%-%q"),  # %% is %, an unknown letter stays
        ("train-oom", "raw\\%j.out", "raw%j.out"),  # a backslash turns patterns off
        ("train-oom", "%99999999999j", "0017039282"),  # sbatch pads to 10 at most (its man page)
        ("train-oom", "%" + "9" * 5000 + "j", "0017039282"),
    ],
)
def test_expand_pattern(row: str, pattern: str, expanded: str) -> None:
    assert expand_pattern(pattern, rows_by_name()[row]) == expanded


@pytest.mark.parametrize(
    ("line", "options"),
    [
        ("sbatch -o out.log train.sh", {"output": "out.log"}),
        ("sbatch --output=o.log --error=e.log train.sh", {"output": "o.log", "error": "e.log"}),
        ("sbatch --output o.log -eerr.log train.sh", {"output": "o.log", "error": "err.log"}),
        ("/usr/bin/sbatch --parsable --exclusive -J x -N 2 -o a.log t.sh", {"output": "a.log"}),  # flags take no value
        ("sbatch train.sh -o theirs.log", {}),  # after the script: the script's own arguments
        ("sbatch --wrap python train.py -o out.log", {}),  # quotes are lost in SubmitLine: stop at the wrap text
        ("srun -o x.log python t.py", None),  # not sbatch: output went to a terminal
        ("", None),
    ],
)
def test_submit_line_options(line: str, options: dict[str, str] | None) -> None:
    assert submit_line_options(line) == options


def test_script_options_from_recorded_batch_script() -> None:
    script = recorded("sacct_batch_script.txt").split("\n", 2)[2]
    assert script_options(script) == {"output": "%x_%j.out", "error": "%x_%j.err"}
    assert script_options("#!/bin/sh\n#SBATCH -o a.log\necho hi\n#SBATCH -e late.log\n") == {"output": "a.log"}


@pytest.mark.parametrize(
    ("row", "script", "paths"),
    [
        ("train-oom", "", [JOBS / "logs/train-oom-17039282.out"]),
        ("train-timeout", "", [JOBS / "slurm-17039281.out"]),
        ("17039284_2", "", [JOBS / "slurm-17039284_2.out"]),  # array default names %A_%a
        ("train-nccl", "", [JOBS / "slurm-17039283.out"]),  # its -o/-e are in the script only
        (
            "train-nccl",
            "#SBATCH --output=%x_%j.out\n#SBATCH --error=%x_%j.err\n",
            [JOBS / "train-nccl_17039283.out", JOBS / "train-nccl_17039283.err"],
        ),
        ("train-timeout", "#SBATCH -o from-script.log\n", [JOBS / "from-script.log"]),
        ("train-oom", "#SBATCH -o from-script.log\n", [JOBS / "logs/train-oom-17039282.out"]),  # command line wins
    ],
)
def test_derived_paths(row: str, script: str, paths: list[Path]) -> None:
    assert derived_paths(rows_by_name()[row], script) == paths


def test_derived_paths_drop_dev_null_and_non_sbatch_jobs() -> None:
    row = rows_by_name()["train-oom"]
    assert derived_paths(row.model_copy(update={"submit_line": "sbatch -o /dev/null t.sh"})) == []
    assert derived_paths(row.model_copy(update={"submit_line": "salloc -N 2"})) == []
    assert derived_paths(row.model_copy(update={"work_dir": ""})) == []  # relative, nothing to resolve against


@pytest.mark.parametrize(
    ("comment", "paths"),
    [
        ("/scratch/run7/logs", [Path("/scratch/run7/logs")]),
        ("logs=/a/out.log; ckpt=/a/ckpt", [Path("/a/out.log"), Path("/a/ckpt")]),
        ("/a.log,/b.log", [Path("/a.log"), Path("/b.log")]),
        ("llama 70B sweep, lr=3e-4", []),
        ("", []),
    ],
)
def test_comment_paths(comment: str, paths: list[Path]) -> None:
    assert comment_paths(comment) == paths


def test_parse_recorded_scontrol() -> None:
    jobs = parse_scontrol(recorded("scontrol_show_job.txt"))
    assert jobs["17039285"]["Comment"] == f"{JOBS}/cancel"  # trailing spaces in the recording
    assert (jobs["17039289"]["ArrayJobId"], jobs["17039289"]["ArrayTaskId"]) == ("17039284", "1")
    assert jobs["17039286"]["StdOut"] == f"{JOBS}/host-%N-root-17039286.log"  # 22.05 leaves %N
    assert scontrol_paths(jobs["17039286"], rows_by_name()["data-oom"]) == [JOBS / "host-vm-root-17039286.log"]
    assert scontrol_paths(jobs["17039283"], rows_by_name()["train-nccl"]) == [
        JOBS / "train-nccl_17039283.out",
        JOBS / "train-nccl_17039283.err",
    ]
    assert parse_scontrol("No jobs in the system\n") == {}


# -- slurm_jobs / slurm_job_logs with a fake runner replaying the recordings -----------------------------------


class Replay:
    """Stands in for subprocess.run: answers sacct / scontrol with recorded text moved under `root`."""

    def __init__(self, root: Path, sacct: str = "sacct_failed_nodefail.txt", scontrol: str | None = None) -> None:
        self.root, self.sacct, self.scontrol, self.calls = root, sacct, scontrol, []

    def _text(self, name: str) -> str:
        return recorded(name).replace(RECORDED_ROOT, str(self.root))

    def __call__(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        self.calls.append(argv)
        if argv[0] == "scontrol":
            if self.scontrol is None:
                raise FileNotFoundError(argv[0])
            return subprocess.CompletedProcess(argv, 0, self._text(self.scontrol), "")
        if "--batch-script" in argv:
            return subprocess.CompletedProcess(argv, 0, self._text("sacct_batch_script.txt"), "")
        return subprocess.CompletedProcess(argv, 0, self._text(self.sacct), "")


def _make_logs(root: Path) -> Path:
    jobs = root / "jobs"
    for rel in (
        "logs/train-oom-17039282.out",
        "train-nccl_17039283.out",
        "train-nccl_17039283.err",
        "cancel/slurm-17039285.out",
        "host-vm-root-17039286.log",
        "slurm-17039281.out",
        "slurm-17039284_1.out",
        "slurm-17039284_2.out",
        "slurm-17039290.out",
        "slurm-17039287.out",
    ):
        (jobs / rel).parent.mkdir(parents=True, exist_ok=True)
        (jobs / rel).write_text("log\n")
    return jobs


def test_slurm_jobs_from_recorded_sacct_without_scontrol(tmp_path: Path) -> None:
    jobs_dir, replay = _make_logs(tmp_path), Replay(tmp_path)
    jobs = {j.job_id: j for j in slurm_jobs(since="2026-12-01T07:00:00", until="now", runner=replay)}
    assert replay.calls[0] == [
        "sacct",
        "--parsable2",
        "--noheader",
        "--allocations",
        "--starttime",
        "2026-12-01T07:00:00",
        "--endtime",
        "now",
        "--state",
        "FAILED,NODE_FAIL,TIMEOUT,OUT_OF_MEMORY,CANCELLED",
        "--format",
        "JobID,JobIDRaw,JobName,State,ExitCode,User,NodeList,AllocTRES,ElapsedRaw,Start,End,WorkDir,Comment,SubmitLine",
    ]
    assert {k: v.log_paths for k, v in jobs.items()} == {
        "17039281": [jobs_dir / "slurm-17039281.out"],
        "17039282": [jobs_dir / "logs/train-oom-17039282.out"],  # -o on the command line
        "17039283": [jobs_dir / "train-nccl_17039283.out", jobs_dir / "train-nccl_17039283.err"],  # stored script
        "17039285": [jobs_dir / "cancel"],  # the comment
        "17039286": [jobs_dir / "host-vm-root-17039286.log"],
        "17039287": [],  # never ran: slurm-17039287.out exists but is not its
        "17039284_1": [jobs_dir / "slurm-17039284_1.out"],
        "17039284_2": [jobs_dir / "slurm-17039284_2.out"],
        "17039290": [jobs_dir / "slurm-17039290.out"],
    }
    assert [c for c in replay.calls if "--batch-script" in c] == [["sacct", "--batch-script", "--jobs", "17039283"]]
    nccl = jobs["17039283"]
    assert (nccl.name, nccl.state, nccl.nodes, nccl.gpus, nccl.elapsed_s, nccl.exit_code) == (
        "train-nccl",
        "FAILED",
        ["vm"],
        4,
        2.0,
        "1:0",
    )


def test_slurm_jobs_prefers_scontrol_and_filters_states(tmp_path: Path) -> None:
    jobs_dir, replay = _make_logs(tmp_path), Replay(tmp_path, "sacct_all_header.txt", "scontrol_show_job.txt")
    jobs = {j.job_id: j for j in slurm_jobs(states=["failed", "to"], runner=replay)}  # sacct's short names too
    assert sorted(jobs) == ["17039281", "17039282", "17039283", "17039284_1", "17039284_2"]  # no COMPLETED
    assert jobs["17039283"].log_paths == [jobs_dir / "train-nccl_17039283.out", jobs_dir / "train-nccl_17039283.err"]
    assert not any("--batch-script" in c for c in replay.calls)  # scontrol knew the paths
    assert replay.calls[0][replay.calls[0].index("--state") + 1] == "FAILED,TIMEOUT"
    assert replay.calls[1] == ["scontrol", "--oneliner", "show", "job"]


def test_since_datetime_is_sent_in_local_time(tmp_path: Path) -> None:
    replay = Replay(tmp_path)
    aware = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    slurm_jobs(since=aware, until=datetime(2026, 12, 2, 8, 30), states=None, runner=replay)
    argv = replay.calls[0]
    assert argv[argv.index("--starttime") + 1] == aware.astimezone().strftime("%Y-%m-%dT%H:%M:%S")
    assert argv[argv.index("--endtime") + 1] == "2026-12-02T08:30:00"
    assert argv[argv.index("--state") + 1] == "FAILED,NODE_FAIL,TIMEOUT,OUT_OF_MEMORY,CANCELLED"


def test_job_log_paths_order_comment_then_scontrol_then_derived(tmp_path: Path) -> None:
    row = parse_sacct(recorded("sacct_failed.txt").replace(RECORDED_ROOT, str(tmp_path)))[1]  # train-oom
    derived = _make_logs(tmp_path) / "logs/train-oom-17039282.out"
    other = tmp_path / "elsewhere.log"
    other.write_text("x\n")
    assert job_log_paths(row) == [derived]
    assert job_log_paths(row, {"StdOut": str(other)}) == [other]
    assert job_log_paths(row.model_copy(update={"comment": f"log={tmp_path}"}), {"StdOut": str(other)}) == [tmp_path]
    assert job_log_paths(row.model_copy(update={"comment": "/gone.log"})) == [derived]  # missing: next source


def test_slurm_job_logs_for_the_bot(tmp_path: Path) -> None:
    jobs_dir, replay = _make_logs(tmp_path), Replay(tmp_path)
    assert slurm_job_logs("17039284_2", runner=replay) == [jobs_dir / "slurm-17039284_2.out"]
    assert slurm_job_logs("17039289", runner=replay) == [jobs_dir / "slurm-17039284_1.out"]  # the raw id works
    assert replay.calls[0][:6] == ["sacct", "--parsable2", "--noheader", "--allocations", "--jobs", "17039284_2"]
    with pytest.raises(InputError, match=r"job 999 not found in Slurm accounting: check the id with `sacct -j 999`"):
        slurm_job_logs("999", runner=replay)


# -- errors ----------------------------------------------------------------------------------------------------


def _failing(exc: BaseException | None = None, rc: int = 1, stderr: str = ""):
    def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        if exc is not None:
            raise exc
        return subprocess.CompletedProcess(argv, rc, "", stderr)

    return run


def test_missing_sacct() -> None:
    with pytest.raises(InputError) as err:
        slurm_jobs(runner=_failing(FileNotFoundError("sacct")))
    assert str(err.value) == "sacct not found: run on a Slurm login node or pass ROOT"
    with pytest.raises(InputError, match="sacct not found"):
        slurm_job_logs("1", runner=_failing(FileNotFoundError("sacct")))


def test_sacct_failing_reports_its_first_stderr_line() -> None:
    rc, stderr = recorded("sacct_error.txt").split("\n", 1)  # "exit 1", then what sacct printed
    with pytest.raises(InputError) as err:
        slurm_jobs(since="yesterday-ish", runner=_failing(rc=int(rc.split()[1]), stderr=stderr + "second line\n"))
    assert str(err.value) == (
        "sacct failed (exit 1): Invalid time specification (pos=0): yesterday-ish; "
        "check that `sacct` works on this node"
    )


def test_sacct_without_a_slurm_config_reports_the_fatal_line() -> None:
    rc, stderr = recorded("sacct_no_config.txt").split("\n", 1)  # real: a node with no slurm.conf
    with pytest.raises(InputError) as err:
        slurm_jobs(runner=_failing(rc=int(rc.split()[1]), stderr=stderr))
    assert str(err.value) == (
        "sacct failed (exit 1): sacct: fatal: Could not establish a configuration source; "
        "check that `sacct` works on this node"
    )


def test_sacct_hanging() -> None:
    with pytest.raises(InputError, match=r"sacct did not answer in 120s: check slurmdbd with `sacct -X`"):
        slurm_jobs(runner=_failing(subprocess.TimeoutExpired("sacct", 120)))


def test_a_real_missing_binary_is_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="sacct not found"):
        slurm_jobs(sacct=str(tmp_path / "no-sacct-here"))


# -- slurm_job_state: `crashcart watch --slurm` asks it until the job is over ----------------------------------


def test_the_job_state_comes_from_scontrol_while_slurmctld_holds_the_job(tmp_path: Path) -> None:
    replay = Replay(tmp_path, scontrol="scontrol_show_job.txt")
    assert slurm_job_state("17039281", runner=replay) == "COMPLETING"  # recorded: past its time limit, ending
    assert [argv[0] for argv in replay.calls] == ["scontrol"]


def test_the_job_state_comes_from_sacct_once_scontrol_has_forgotten_it(tmp_path: Path) -> None:
    replay = Replay(tmp_path)  # no scontrol: as for a job past MinJobAge
    assert slurm_job_state("17039282", runner=replay) == "FAILED"
    with pytest.raises(InputError, match=r"job 999 not found in Slurm: check the id with `sacct -j 999`"):
        slurm_job_state("999", runner=replay)


@pytest.mark.parametrize(
    ("state", "ended"),
    [
        ("RUNNING", False),
        ("PENDING", False),
        ("COMPLETING", False),
        ("REQUEUED", False),
        ("COMPLETED", True),
        ("FAILED", True),
        ("NODE_FAIL", True),
        ("CANCELLED", True),
        ("TIMEOUT", True),
        ("OUT_OF_MEMORY", True),
    ],
)
def test_which_states_are_over(state: str, ended: bool) -> None:
    assert job_ended(state) is ended

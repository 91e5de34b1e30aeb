"""A failure's fingerprint: the failure's own lines, nearly the same alone and buried in a big job."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crashcart.api import triage
from crashcart.evals.dataset import load_evalset
from crashcart.evals.recurrence import bury, healthy_job
from crashcart.knowledge.embeddings import HashingEmbedder

# Real cases of the shared dev set, each of another shape: a rich traceback cut at its top, a Slurm step
# cancellation with progress bars, an ECC error, a data loader's traceback.
CASES = ["d-env-tfver-002", "d-config-ncclwait-002", "d-gpu-ecc-001", "d-data-pil-002"]


def _similarity(a: str, b: str) -> float:
    rows = HashingEmbedder().embed([a, b])
    return float(np.dot(rows[0], rows[1]))


def test_a_failure_buried_in_a_multi_node_job_keeps_nearly_its_own_fingerprint(
    dev_evalset: Path, tmp_path: Path
) -> None:
    cases = {c.id: c for c in load_evalset(dev_evalset)}
    for i, name in enumerate(n for n in CASES if n in cases):
        case = cases[name]
        alone = triage([str(case.resolve(dev_evalset))]).fingerprint
        logs = bury(case, dev_evalset, tmp_path / name, i, nodes=3, mb_per_node=0.5)
        buried = triage([str(logs)]).fingerprint
        assert _similarity(alone.text(), buried.text()) >= 0.6, (name, alone, buried)


def test_a_healthy_job_has_no_rule_or_symptom_in_its_fingerprint(tmp_path: Path) -> None:
    fp = triage([str(healthy_job(tmp_path, 0, nodes=2, mb_per_node=0.5))]).fingerprint
    assert fp.rule_ids == [] and fp.classes == []
    assert all("Watchdog" not in t for t in fp.templates)


def test_symptoms_stand_in_only_where_no_root_cause_shows(tmp_path: Path) -> None:
    # pytorch/pytorch#118369's watchdog line (a symptom) beside an XID 79 (wilicc/gpu-burn#1: a root cause)
    timeout = (
        "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out."
    )
    xid = "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "rank0.log").write_text(timeout + "\n")
    only = triage([str(tmp_path / "a")]).fingerprint
    assert only.rule_ids and any("Watchdog" in t for t in only.templates)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "rank0.log").write_text(timeout + "\n" + xid + "\n")
    both = triage([str(tmp_path / "b")]).fingerprint
    assert all("Watchdog" not in t for t in both.templates) and any("Xid" in t for t in both.templates)
    assert all(not r.startswith("coll.") for r in both.rule_ids)


def test_only_the_files_the_root_cause_shows_in_give_their_last_lines(tmp_path: Path) -> None:
    # The XID (wilicc/gpu-burn#1) in one node's kernel log; another node's last line is torchrun's start-up note
    # (pytorch/pytorch#101281): that node's tail says nothing of this failure.
    (tmp_path / "node01.log").write_text("[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\n")
    note = "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default"
    (tmp_path / "node02.log").write_text(note + "\n")
    fp = triage([str(tmp_path)]).fingerprint
    assert any("Xid" in t for t in fp.templates) and all("OMP_NUM_THREADS" not in t for t in fp.templates)
    (tmp_path / "node01.log").unlink()  # no root cause anywhere: every file's last lines are the failure's
    assert any("OMP_NUM_THREADS" in t for t in triage([str(tmp_path)]).fingerprint.templates)

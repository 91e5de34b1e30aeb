"""agent/watch.py: root causes reported once per class and place as their lines arrive, a job's end noticed, progress
handed to the stall watch.

Every line is one `crashcart generate` wrote (crashcart/evals/generator.py, which names the source of each): its
xid79 and host_oom jobs of 4 nodes with node02 at fault, its ib_link job with node03 at fault, and their healthy
iteration lines.
"""

from __future__ import annotations

from crashcart.agent.watch import Watcher
from crashcart.knowledge.rules import load_rules
from crashcart.knowledge.taxonomy import Action, FailureClass

XID = (
    "Feb 14 16:14:07 node02 kernel: [280407.738379] NVRM: Xid (PCI:0000:61:00): 79, pid=49491, name=python,"
    " GPU has fallen off the bus."
)
CUDA_FAILURE = "[default3]:node02:49491:49655 [3] enqueue.cc:1556 NCCL WARN Cuda failure 'unknown error'"
IB = "[default3]:node03:49491:49655 [3] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error"
OOM_KILLER = (
    "Feb 14 16:14:12 node02 kernel: [280412.912379] python invoked oom-killer:"
    " gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"
)
STEP_OOM = (
    "slurmstepd: error: Detected 1 oom_kill event in StepId=4379278.0. Some of the step tasks have been OOM Killed."
)
CHILD_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
TIMERS = "[default3]:(min, max) time across ranks (ms):"


def iteration(k: int) -> str:
    """Megatron's iteration line as the generator writes it (NVIDIA/Megatron-LM#756), at iteration k."""
    return (
        f"[default3]: [2026-02-14 11:{25 + k // 12:02d}:{(k % 12) * 5:02d}] iteration {k:8d}/    4158 |"
        f" consumed samples: {k * 1024:12d} | elapsed time per iteration (ms): 5194.4 | lm loss: 1.071561E+01 |"
    )


def block(*lines: str, crlf: bool = False) -> bytes:
    end = "\r\n" if crlf else "\n"
    return "".join(line + end for line in lines).encode()


def watcher(stall_after: float | None = None) -> Watcher:
    return Watcher(load_rules(), stall_after)


def test_an_xid_is_reported_at_once_with_its_node_line_and_drain_command() -> None:
    [report] = watcher().feed("kernel-node02.log", 40, block(TIMERS, XID), now=0.0)
    assert (report.kind, report.failure_class, report.action) == (
        "root_cause",
        FailureClass.GPU_HARDWARE,
        Action.DRAIN_NODE_AND_RETRY,
    )
    assert report.nodes == ["node02"]
    assert [(e.file, e.line, e.text) for e in report.evidence] == [("kernel-node02.log", 42, XID)]
    assert report.drain == "scontrol update NodeName=node02 State=DRAIN Reason='crashcart: gpu.xid.fallen_off_bus'"


def test_a_repeat_or_a_weaker_consequence_on_the_same_node_is_not_reported_again() -> None:
    w = watcher()
    assert len(w.feed("kernel-node02.log", 0, block(XID), now=0.0)) == 1
    assert w.feed("kernel-node02.log", 1, block(XID, XID), now=1.0) == []  # the same Xid again
    assert w.feed("node02.log", 500, block(CUDA_FAILURE), now=1.0) == []  # the fallen GPU's consequence
    [ib] = w.feed("node03.log", 500, block(IB), now=1.0)  # another node: news
    assert (ib.failure_class, ib.nodes) == (FailureClass.NETWORK, ["node03"])


def test_a_line_naming_no_place_adds_nothing_to_its_class_reported_on_a_node() -> None:
    w = watcher()
    [oom] = w.feed("kernel-node02.log", 0, block(OOM_KILLER), now=0.0)
    assert (oom.failure_class, oom.nodes, oom.drain) == (FailureClass.HOST_OOM, ["node02"], None)  # fix_job
    assert w.feed("slurm-4379278.out", 3, block(STEP_OOM), now=1.0) == []


def test_crlf_lines_are_reported_without_their_cr_and_counted_right() -> None:
    [report] = watcher().feed("kernel-node02.log", 0, block(iteration(1), TIMERS, XID, crlf=True), now=0.0)
    assert (report.evidence[0].line, report.evidence[0].text) == (3, XID)


def test_healthy_lines_report_nothing_and_a_terminal_line_marks_the_end() -> None:
    w = watcher(stall_after=1.0)
    assert w.feed("node00.log", 0, block(iteration(1), TIMERS, iteration(2)), now=0.0) == []
    assert not w.ending
    assert w.feed("node00.log", 3, block("    raise ChildFailedError(", CHILD_FAILED), now=1.0) == []
    assert w.ending
    assert w.check_stall(now=100.0) is None  # the ranks stopped because the job is ending


def test_progress_lines_feed_the_stall_watch_with_their_iteration() -> None:
    w = watcher(stall_after=10.0)
    w.feed("node00.log", 0, block(iteration(1), TIMERS, iteration(2)), now=0.0)
    w.feed("node01.log", 0, block(iteration(1), TIMERS, iteration(2), TIMERS, iteration(3)), now=1.0)
    assert w.check_stall(now=5.0) is None
    stall = w.check_stall(now=11.5)
    assert stall is not None
    assert (stall.nodes, stall.iteration, stall.evidence[0].line) == (["node00"], 2, 3)
    assert stall.why == "stopped first, at iteration 2 (others reached 3)"
    assert w.check_stall(now=20.0) is None  # once per stall


def test_progress_read_after_a_terminal_line_is_a_restart_and_the_job_is_not_ending() -> None:
    w = watcher(stall_after=1.0)
    w.feed("node00.log", 0, block(iteration(40), TIMERS, iteration(41)), now=0.0)
    w.feed("node00.log", 3, block(CHILD_FAILED), now=1.0)
    assert w.ending
    w.feed("node00.log", 4, block(iteration(21), TIMERS), now=2.0)  # torchrun restarted from the checkpoint at 20
    assert not w.ending
    stall = w.check_stall(now=5.0)
    assert stall is not None and stall.iteration == 21

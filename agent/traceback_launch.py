"""Traceback rules about how the job was launched and run across processes.

A launcher's summary of a child that failed, and Ray's exceptions that wrap a failure of a remote task, actor or
node, only say that something failed elsewhere: symptoms, whose class the failure itself decides. A launcher
variable that was never set (os.environ's KeyError, int() of os.environ.get's None, torch's env:// rendezvous) and a
process or GPU count that a launcher or pool refuses are the job's configuration. Some of these are told by the
frames alone, so a traceback the log cut off before its exception line is judged here too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashcart.agent.traceback_findings import LIKELY, SUMMARY, WEAK, Finding
from crashcart.agent.traceback_frames import basename, is_stdlib, is_user, raiser, short_type
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import Frame, RaisedException, Traceback

_EXIT_SIGNAL = re.compile(r"Signal (\d+) \((SIG\w+)\)|exitcode\s*:\s*-(\d+)")
_SUMMARY_CLASS = {
    "1": FailureClass.CANCELLED,
    "2": FailureClass.CANCELLED,
    "15": FailureClass.CANCELLED,
    "9": FailureClass.HOST_OOM,
    "7": FailureClass.HOST_OOM,
}


def launcher_summary(exc: RaisedException, tb: Traceback) -> Finding | None:
    """torchrun's ChildFailedError: the child's exit signal hints at the class; the child's traceback decides."""
    last = tb.kind == "child_failed" and exc is tb.chain[-1]
    if not last and short_type(exc) != "ChildFailedError":
        return None
    found = _EXIT_SIGNAL.search(exc.message)
    signal = (found.group(1) or found.group(3)) if found else None
    cls = _SUMMARY_CLASS.get(signal or "", FailureClass.CODE_BUG)
    label = f"a worker died of signal {signal}" if signal else "a worker failed"
    return Finding("launcher_summary", cls, SUMMARY, label)


# ray.exceptions (python/ray/exceptions.py) and the old ray.worker.RayGetError: the driver's view of a failure
# in a remote task or actor, whose own traceback (or the worker's log) says why; the lost-object and dead-raylet
# ones say a node went away.
_RAY_REMOTE = frozenset(
    {"RayTaskError", "RayGetError", "RayActorError", "ActorDiedError", "WorkerCrashedError", "OwnerDiedError"}
)
_RAY_NODE = frozenset(
    {"LocalRayletDiedError", "NodeDiedError", "ObjectLostError", "ObjectFetchTimedOutError"}
    | {"ObjectReconstructionFailedError", "ObjectReconstructionFailedMaxAttemptsExceededError"}
)


def remote_failure(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Ray's wrapper of a failure elsewhere: a symptom, never the cause."""
    if not exc.exc_type.startswith("ray."):
        return None
    kind = short_type(exc)
    if kind in _RAY_NODE:
        return Finding("remote_node_lost", FailureClass.NODE_FAILURE, WEAK, "a Ray node or its objects were lost")
    if kind in _RAY_REMOTE:
        return Finding("remote_failure", FailureClass.CODE_BUG, WEAK, "a remote Ray task or actor failed")
    return None


# A count of processes, workers or GPUs, as launchers and pools name it in what they refuse: multiprocessing's
# "Number of processes must be at least 1", accelerate's "add `num_processes=...` to your call".
_PROCESS_COUNT = re.compile(
    r"(?i)\b(?:number of (?:processes|workers|gpus|devices|nodes)|num_(?:processes|workers|gpus|devices|nodes|procs)"
    r"|nproc(?:_per_node|s)?|node_rank)\b"
)


# int() of what os.environ.get / os.getenv return for a variable nobody set (None), in older and newer Pythons' words
_INT_OF_NONE = re.compile(r"argument must be a string, a bytes-like object or a (?:real )?number, not 'NoneType'")
_ENV_READ = re.compile(r"\bos\.(?:environ\.get|getenv)\(")


def launch_settings(exc: RaisedException, tb: Traceback) -> Finding | None:
    """A launcher variable the job reads but nobody set, or a process count a launcher or pool refuses."""
    if reads_unset_variable(exc.frames) or (short_type(exc) == "KeyError" and _environ_lookup(exc.frames)):
        return Finding("missing_env_var", FailureClass.CONFIG_ERROR, LIKELY, "a launcher variable is not set")
    if _converts_unset_variable(exc):
        return Finding("missing_env_var", FailureClass.CONFIG_ERROR, LIKELY, "an environment variable is not set")
    outside = bool(exc.frames) and not is_user(exc.frames[-1])
    if short_type(exc) == "ValueError" and outside and _PROCESS_COUNT.search(exc.message):
        return Finding("process_count", FailureClass.CONFIG_ERROR, LIKELY, "the process count was refused")
    return None


def reads_unset_variable(frames: Sequence[Frame]) -> bool:
    """torch.distributed's env:// rendezvous failed reading a variable (MASTER_ADDR, RANK ...): its innermost
    frame is the reader that raises when the variable is not set."""
    return bool(frames) and frames[-1].function == "_get_env_or_raise"


def _converts_unset_variable(exc: RaisedException) -> bool:
    """int(os.environ.get("LOCAL_RANK")) of a variable that is not set: the TypeError of int(None), raised on the line
    that reads the variable without a default."""
    if short_type(exc) != "TypeError" or not _INT_OF_NONE.search(exc.message):
        return False
    raised = raiser(exc.frames)
    return raised is not None and _ENV_READ.search(raised.source or "") is not None


def _environ_lookup(frames: Sequence[Frame]) -> bool:
    """The KeyError came out of os.environ[...]: os.py's __getitem__, or the line that indexes it."""
    if any(is_stdlib(f) and basename(f) == "os.py" and f.function == "__getitem__" for f in frames):
        return True
    raised = raiser(frames)
    return raised is not None and "environ[" in (raised.source or "")


# A launcher variable read by indexing os.environ, on the source line of a frame: os.environ["LOCAL_RANK"].
_LAUNCHER_INDEX = re.compile(
    r"\bos\.environ\[\s*['\"](?:LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT"
    r"|SLURM_[A-Z_]+|OMPI_COMM_WORLD_[A-Z_]+)['\"]\s*\]"
)


def judge_unfinished(frames: Sequence[Frame]) -> Finding | None:
    """A traceback the log cut off before its exception line, judged by what its frames alone tell: torch's env://
    reader, or an innermost frame that indexes os.environ for a launcher variable (the KeyError it raised is what
    the log lost; Theodore-PKU/MC-DDPM#1 pasted the frames innermost first, under the bare 'LOCAL_RANK')."""
    if reads_unset_variable(frames):
        return Finding("missing_env_var", FailureClass.CONFIG_ERROR, LIKELY, "a launcher variable is not set")
    innermost = _innermost(frames)
    if innermost is not None and _LAUNCHER_INDEX.search(innermost.source or ""):
        return Finding("missing_env_var", FailureClass.CONFIG_ERROR, LIKELY, "a launcher variable is not set")
    return None


def _innermost(frames: Sequence[Frame]) -> Frame | None:
    """The frame that raised: the last as Python prints them, the first when a paste put them innermost first
    (the module's frame, always the outermost, is then last and not first)."""
    if not frames:
        return None
    reversed_paste = frames[-1].function == "<module>" and frames[0].function != "<module>"
    return frames[0] if reversed_paste else frames[-1]

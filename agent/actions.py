"""Where the evidence says more about what to do than the class's default action (taxonomy.md's table).

A full disk is storage, and storage goes to the team that runs it by default. But when what filled the disk is
the job's own download or dataset cache (Hugging Face datasets building its Arrow files, a hub download into
~/.cache), the owner fixes it by pointing the cache at a disk with room: the threads of such failures end with
"move HF_DATASETS_CACHE", not with a storage ticket. The writer is read from the traceback's frames or the
path in the message, never from the file name.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from crashcart.agent.event_kinds import Signal
from crashcart.knowledge.taxonomy import Action, FailureClass
from crashcart.parsers.models import FileScan, Traceback

# Libraries whose writes on a training job are its download and dataset caches.
CACHE_WRITERS = frozenset({"datasets", "pyarrow", "fsspec", "huggingface_hub"})
_CACHE_PATH = re.compile(r"[\\/]\.cache[\\/]|[\\/]huggingface[\\/](?:datasets|hub)[\\/]")
_DATASETS_CHECK = "Not enough disk space. Needed: "  # datasets' own check of its cache filesystem (builder.py)
FULL_CACHE_STEP = (
    "The job's own cache filled the disk: point it at a filesystem with room (HF_DATASETS_CACHE, HF_HOME or the "
    "loader's cache_dir) or clear it, then resubmit."
)


def refined_action(event: Signal, scans: Sequence[FileScan]) -> tuple[Action, list[str]]:
    """The action for the deciding event, and steps to put before its class's runbook."""
    if event.failure_class is FailureClass.STORAGE and event.rule_id == "storage.no_space" and _a_cache(event, scans):
        return Action.FIX_JOB, [FULL_CACHE_STEP]
    return event.action, []


def _a_cache(event: Signal, scans: Sequence[FileScan]) -> bool:
    if _DATASETS_CHECK in event.text or _CACHE_PATH.search(event.text):
        return True
    tb = _traceback_at(event, scans)
    return tb is not None and any(f.package in CACHE_WRITERS for e in tb.chain for f in e.frames)


def _traceback_at(event: Signal, scans: Sequence[FileScan]) -> Traceback | None:
    """The traceback whose exception line is the event's line."""
    for scan in scans:
        if scan.file != event.file:
            continue
        for tb in scan.tracebacks:
            if any(e.ref.line == event.line for e in tb.chain):
                return tb
    return None


def drain_command(node: str, reason: str) -> str:
    """The Slurm command that takes a node out of service, quoted for a shell: printed for an operator to run,
    never run by crashcart (the node's name comes from a log)."""
    return f"scontrol update NodeName={shlex.quote(node)} State=DRAIN Reason={shlex.quote(reason)}"

"""Where a machine failure happened when its own lines name no node: the host a header above them names.

A Torque/PBS job mail names its job's host once (`Exec host:  gpu-2-17/5`) and then only that the job was
deleted for a node failure; nvidia-smi run at a shell prompt (`zeyer@cn-234 ~ % nvidia-smi`) prints that it
cannot reach a GPU, with no host. Both headers are context rules (knowledge/signatures/places.yaml) with a
`host` capture: each names the host of the lines after it, up to the next header; a job mail kept in a file of
its own names the host of the whole job. Read only for the few root-cause lines of a machine failure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from crashcart.knowledge.records import LineRef
from crashcart.parsers.attribution import plausible_host
from crashcart.parsers.models import FileScan, RuleHit

JOB_HOST = "ctx.job_host"
SHELL_PROMPT = "ctx.shell_prompt"


def header_hosts(lines: Sequence[LineRef], scans: Sequence[FileScan]) -> list[str]:
    """The hosts the headers above `lines` name, in order; none where the headers do not settle it."""
    job = {hit.captures["host"] for s in scans for hit in _headers(s) if hit.rule_id == JOB_HOST}
    whole_job = next(iter(job)) if len(job) == 1 else None  # a job mail kept in a file of its own
    found = (_host_above(line, scans) or whole_job for line in lines)
    return list(dict.fromkeys(host for host in found if host))


def _host_above(line: LineRef, scans: Sequence[FileScan]) -> str | None:
    """The host of the last header above the line in its own file (a prompt, a job mail's)."""
    above = None
    for scan in scans:
        if scan.file == line.file:
            for hit in _headers(scan):  # in the order of their lines
                if hit.ref.line <= line.line:
                    above = hit.captures["host"]
    return above


def _headers(scan: FileScan) -> Iterator[RuleHit]:
    for hit in scan.hits:
        host = hit.captures.get("host")
        if hit.rule_id in (JOB_HOST, SHELL_PROMPT) and host and plausible_host(host):
            yield hit

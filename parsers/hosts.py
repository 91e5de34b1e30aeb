"""Where a message says a failure happened: hosts it names, the peer it lost, a launcher's summary block.

attribution.py reads who PRINTED a line; this reads what the line is ABOUT. A launcher or scheduler reports
the node it lost from somewhere else (Slurm's controller, Ray's head, mpirun, pdsh on the first node), and a
fabric error names the peer it could not reach: on those lines the node to drain is in the message, not the
prefix. Called by the agent on the lines it weighs, not on every line of a log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashcart.parsers.attribution import plausible_host, printer_node, strip_prefixes

_HOST = r"([A-Za-z0-9][\w.-]*?(?:\[[\d,-]+\][\w.-]*)?)"  # a name, an IP, or a Slurm host list `gpu-[041-042]`
_END = r"(?=[\s,;:)'\"]|\.?$)"
# Each family as its program prints it; group 1 is the host the message is about.
_REPORTS = [
    # Slurm (srun, slurmstepd): `srun: error: Node failure on X`, `*** STEP 6053.0 ON X CANCELLED`,
    # `srun: error: X: task 3: Exited with exit code 1`.
    re.compile(r"Node failure on " + _HOST + _END),
    re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON " + _HOST + r" CANCELLED"),
    re.compile(r"srun: error: " + _HOST + r": tasks? \d"),
    # Ray's GCS: `The node with node id: 75b2... and ip: 10.4.4.107 has been marked dead` (or `address:`).
    re.compile(r"The node with node id: \w+ and (?:ip|address): " + _HOST + _END),
    # Open MPI's mpirun: `mpirun noticed that process rank 14 with PID 4257 on node compute-0-2.local exited`,
    # and ORTE's lost daemon: `Remote daemon: [[10831,0],1] on node n0`.
    re.compile(r"process rank \d+ with PID \d+ on node " + _HOST + _END),
    re.compile(r"Remote daemon: \S+ on node " + _HOST + _END),
    # Horovod elastic (runner/elastic/discovery.py, driver.py) and gloo_run.py's first failed process.
    re.compile(r"blacklist failing host: " + _HOST + _END),
    re.compile(r"\bhost " + _HOST + r" has been blacklisted"),
    re.compile(r"Process name: " + _HOST + r"\[\d+\]"),
    # pdsh on the launching node about a remote one (DeepSpeed's multi-node runner): `pdsh@a: b: ssh exited`.
    re.compile(r"pdsh@\S+: " + _HOST + r": ssh exited with exit code"),
    re.compile(r"ssh: connect to host " + _HOST + r" port \d+"),
]
_WORDS = ("Node failure", "***", "srun: error", "node id", "on node", "blacklist", "Process name", "ssh")


def hosts_in_message(text: str) -> list[str]:
    """The hosts a dead-node or lost-host report names, in order, without the line's own printer.

    A line whose prefix already names its printer (`pdsh@node01: node02: ...` is printed on node01) says
    nothing new about that host; the host it reports on is the one to look at.
    """
    if not any(word in text for word in _WORDS):
        return []
    printer = printer_node(text)
    found: list[str] = []
    for pattern in _REPORTS:
        for m in pattern.finditer(text):
            host = m.group(1).rstrip(".")
            if host != printer and host not in found and plausible_host(host):
                found.append(host)
    return found


# The far end of a broken connection. NCCL prints `peer <addr><port>` (src/misc/socket.cc, the IB
# transport): an IPv4 or IPv6 address or a host name; gloo prints `[<addr>]:<port>`.
_PEERS = [
    re.compile(r"(?:from|by remote) peer ([\w.:-]+?)(?:%\w+)?<\d+>"),
    re.compile(r"(?:by peer|[Rr]ead error|[Ww]rite error) \[([\w.:-]+?)(?:%\w+)?\]:\d+"),
]


def peer_host(text: str) -> str | None:
    """The remote peer a fabric or socket error names (the other end, not the printer), or None.

    `NET/IB : Got completion from peer 10.64.0.4<41455> with status=12` is printed on the node whose
    send failed; the peer is where the other half of the link is, a second suspect, never the printer.
    """
    for pattern in _PEERS:
        m = pattern.search(text)
        if m:
            peer = m.group(1)
            return peer if peer != printer_node(text) else None
    return None


# torchrun's failure summary (torch/distributed/elastic/multiprocessing/errors): a `[N]:` header, then
# `  key : value` lines; `rank : 3 (local_rank: 3)` and `exitcode : 1 (pid: 14692)` carry two values each.
_FIELD = re.compile(r"\s+(time|host|rank|exitcode|error_file|traceback)\s*: ?(.*?)\s*$")
_PAIR = re.compile(r"(\S+) \((local_rank|pid): (\S+)\)")
_HEADER = re.compile(r"\s*\[\d+\]:\s*$")
_ROOT = "Root Cause (first observed failure):"


def summary_fields(lines: Sequence[str]) -> dict[str, str]:
    """The fields of one `key : value` block of a launcher's failure summary: host, rank, local_rank, ...

    The block read is the root cause's when the lines hold torchrun's `Root Cause` heading, else the first
    one; it ends at the next `[N]:` header or rule line. Launcher prefixes (srun labels, pdsh hosts) are
    taken off first, so a summary that went through srun reads the same.
    """
    texts = [strip_prefixes(line) for line in lines]
    start = next((i + 1 for i, t in enumerate(texts) if t.strip() == _ROOT), 0)
    fields: dict[str, str] = {}
    for text in texts[start:]:
        m = _FIELD.match(text)
        if m:
            key, value = m.groups()
            pair = _PAIR.fullmatch(value)
            if pair:
                value, fields[pair.group(2)] = pair.group(1), pair.group(3)
            fields.setdefault(key, value)
        elif fields and (_HEADER.match(text) or text.lstrip().startswith(("---", "==="))):
            break
    return fields

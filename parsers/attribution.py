"""Who printed a log line: node and rank, read off the file's name or the line's own prefixes.

A multi-node job leaves many files, or one file where launchers (torchrun, srun, mpirun, pdsh, Ray)
interleave ranks; a diagnosis needs to know which rank on which node failed first. Every guess here
is conservative: a wrong node or rank sends the user to the wrong machine, a missing one does not.
A per-node index is never a global rank: torchrun's `[defaultN]:` is the local rank and NCCL's `[N]`
after `host:pid:tid` the local CUDA device, so on node07 of a 16-node job `[default0]` is rank 56.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from crashcart.parsers.numbers import small_int


class Attribution(NamedTuple):
    """Node, global rank and local rank of a file or line; None where it cannot be read off (a tuple: hot path)."""

    node: str | None = None
    rank: int | None = None  # global: torchrun `[rankN]:`, mpirun/horovod tags, srun task ids, `[Rank N]`
    local: int | None = None  # a per-node index (torchrun `[defaultN]:`): a global rank only on one node


NONE = Attribution()

# ---------------------------------------------------------------------------------------------------
# Fast path: one precompiled bytes regex, matched at position 0, for every line of multi-GB logs.
# Alternatives, in order: torchrun's global `[rankN]:` (maybe behind the local `[defaultN]:`, both maybe
# behind an srun label), the local `[defaultN]:` alone, OpenMPI --tag-output `[job,rank]<stdout>:` and
# horovodrun's `[rank]<stdout>:` (gloo_run.py prefixes the global rank), srun --label `N: ` (padded to the
# width of the largest task id). Exactly one group matches: `lastindex`. Group 2 is a local rank.
_PREFIX_BODY = (
    rb"(?:(?: {0,4}\d{1,6}: )?(?:\[default\d{1,6}\]:)?\[rank(\d{1,7})\]:"
    rb"|(?: {0,4}\d{1,6}: )?\[default(\d{1,6})\]:"
    rb"|\[(?:\d{1,7},)?(\d{1,7})\]<std(?:out|err)>:"
    rb"| {0,4}(\d{1,6}): )"
)
# A first-byte test up front: most unprefixed lines fail there (measured ~100 -> ~70 ns).
RANK_PREFIX: re.Pattern[bytes] = re.compile(rb"(?=[\[ 0-9])" + _PREFIX_BODY)
_LOCAL_GROUP = 2
_SRUN_LABEL_GROUP = 4

_match = RANK_PREFIX.match  # bound once: saves an attribute lookup per line


def rank_prefix(line: bytes) -> int | None:
    """The global rank in the line's leading launcher prefix, or None (one `.match`, nothing else)."""
    m = _match(line)
    if m is None or m.lastindex == _LOCAL_GROUP:
        return None
    return int(m[m.lastindex])  # type: ignore[index]


def has_rank_prefixes(sample: list[bytes]) -> bool:
    """Whether a file's first lines carry launcher prefixes, so per-line checks are worth doing.

    One bracketed prefix is enough (banners before the ranks start are common); the bare srun
    label `N: ` is easy to meet by chance, so it must be seen twice.
    """
    labels = 0
    for line in sample:
        m = RANK_PREFIX.match(line)
        if m:
            if m.lastindex != _SRUN_LABEL_GROUP:
                return True
            labels += 1
    return labels >= 2


def _words(text: str) -> frozenset[str]:
    """A word list written as text: one line of words reads better than a column of quoted ones."""
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------------------
# Host names. A token is taken for a host only where its place on the line says so (NCCL, syslog,
# Slurm, Ray), or, for bare `host: ` prefixes (pdsh, DeepSpeed's multi-node runner), where it looks like
# one: an IPv4 address, or a name whose short part ends in a digit and does not start with a word
# that commonly ends config keys and metrics (`fp16: True`, `top1: 0.93`, `step100: ...`).


_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_PDSH_HOST = re.compile(r"[A-Za-z][A-Za-z0-9-]*\d(?:\.[A-Za-z0-9-]+)*")
_NOT_HOST_STEMS = _words(
    "fp bf int uint float bfloat double half top acc beta alpha epoch ep step steps iter iteration it loss"
    " layer layers block cuda sm rank local device dev cpu py python version lr sample batch seed test val"
    " train eval stage phase part shard chunk fold trial run exp job task tasks proc process thread line col"
    " row item index idx id num torch nccl cudnn cublas"
)
_LEVELS = _words("TRACE DEBUG INFO NOTICE WARN WARNING ERROR ERR CRITICAL FATAL ALERT EMERG")
# Names that say "this machine" wherever they are printed: they tell one node of a job from no other.
_SELF_NAMES = frozenset(["localhost", "LOCALHOST", "localhost.localdomain", "127.0.0.1", "0.0.0.0"])


def looks_like_host(name: str) -> bool:
    """Whether a bare token is a host name or IPv4 address, not a config key, metric or word."""
    if _IPV4.fullmatch(name):
        return name not in _SELF_NAMES
    if not _PDSH_HOST.fullmatch(name):
        return False
    short = name.split(".", 1)[0]
    stem = short.rstrip("0123456789-").lower()
    letters = re.match(r"[a-z]+", stem)
    word = letters.group(0) if letters else ""
    if len(word) < 2 or word in _NOT_HOST_STEMS:
        return False
    return word != "gpu" or len(short) - len(short.rstrip("0123456789")) >= 3


def plausible_host(name: str) -> bool:
    """A host in a position that says `host` (NCCL, syslog): not a number, time, log level or `localhost`."""
    if name in _SELF_NAMES or name.upper() in _LEVELS:
        return False
    return not name[0].isdigit() or _IPV4.fullmatch(name) is not None or not name.replace(".", "").isdigit()


# ---------------------------------------------------------------------------------------------------
# Launcher prefixes as text: peeled off one at a time from the start of a line.
_LEAD = re.compile(
    r"\[(rank|default)(\d{1,7})\]: ?"
    r"|\[(?:\d{1,7},)?(\d{1,7})\]<std(?:out|err)>: ?"
    r"| {0,4}(\d{1,6}): "
    r"|([A-Za-z0-9][A-Za-z0-9.-]{0,62}): "
)
_ANYWHERE = re.compile(r"\[rank(\d{1,7})\]:|\[(?:\d{1,7},)?(\d{1,7})\]<std(?:out|err)>:")
_MSG_RANK = re.compile(r"\[(?:[^\[\]]{0,60}?\s)?Rank (\d{1,7})\]|\[rank: ?(\d{1,7})\]")
# NCCL's own prefix, `host:pid:tid [cudaDev] ` (src/debug.cc): the host is the printer, [N] its local GPU.
_NCCL_HOST = r"([A-Za-z0-9][\w.-]{0,62}):\d+:\d+ \[\d+\] "
_NCCL = re.compile(_NCCL_HOST)
# NCCL's prefix where NCCL_DEBUG's format drops pid and tid: `gpu-server320 [5] misc/socket.cc:46 NCCL WARN`.
_NCCL_NO_PID = re.compile(r"([A-Za-z][\w.-]{0,62}) \[\d+\] (?:[\w/.-]+\.cc:\d+ )?NCCL ")
# UCX's log prefix, `[host:pid:thread:tid] file.c:line  message` (src/ucs/debug/log.c).
_UCX = re.compile(r"\[([A-Za-z][\w.-]{0,62}):\d+:\d+:\d+\] ")
# MPICH/Intel MPI -prepend-rank puts the global rank in brackets before it: `[2] node0:13572:13572 [1] NCCL`.
_MPI_RANK_NCCL = re.compile(r"\[(\d{1,7})\] " + _NCCL_HOST)
# Ray's worker prefix, `(RayTrainWorker pid=162057, ip=192.168.0.70) `, maybe nested; no ip on the head node.
_RAY = re.compile(r"\((?:[\w.:-]+ )?pid=\d+(?:, ip=([\d.]+))?\) ")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_SYSLOG_TAG = r" [A-Za-z][\w./()-]*(?:\[\d+\])?: "
_SYSLOG = re.compile(_MONTH + r" [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)? ([A-Za-z0-9][\w.-]*)" + _SYSLOG_TAG)
_ISO_SYSLOG = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)? ([A-Za-z0-9][\w.-]*)" + _SYSLOG_TAG
)
_SRUN = re.compile(
    r"srun: (?:error: )?(?:([\w.-]+): tasks? (\d+(?:[-,]\d+)*): "
    r"|Node failure on ([\w.-]+)|.*? failed on node ([\w.-]+))"
)
_STEPD = re.compile(r"\*\*\* (?:JOB|STEP) [\w.+]+ ON ([\w.-]+) CANCELLED")


def _peel(text: str) -> tuple[int, str | None, int | None, int | None, int | None]:
    """Walk the leading prefixes: (end, pdsh host, global rank, srun label, local rank)."""
    pos, node, rank, label, local = 0, None, None, None, None
    for _ in range(5):
        m = _LEAD.match(text, pos)
        if m is None:
            break
        kind, host = m.group(1), m.group(5)
        if kind == "rank":
            rank = int(m.group(2))
        elif kind == "default":
            local = int(m.group(2))
        elif m.group(3) is not None:
            rank = int(m.group(3))
        elif m.group(4) is not None:
            label = int(m.group(4))
        elif node is None and pos == 0 and looks_like_host(host):
            node = host
        else:
            break
        pos = m.end()
    return pos, node, rank, label, local


def strip_prefixes(text: str) -> str:
    """The line without its leading launcher prefixes, so ranks and hosts do not split templates."""
    return text[_peel(text)[0] :]


def _behind_ray(body: str) -> tuple[str | None, int | None]:
    """Past Ray's `(Name pid=N, ip=X) ` prefixes: the innermost worker's ip names every line it prints."""
    pos, ip = 0, None
    while (m := _RAY.match(body, pos)) is not None:
        pos, ip = m.end(), m.group(1) or ip
    node, rank = _node_in_body(body[pos:], reports=False) if pos else (None, None)
    return ip or node, rank


def _nccl_further_in(body: str) -> tuple[str | None, int | None]:
    """NCCL's prefix behind an MPI rank (`[2] node0:1:2 [1] `), a timestamp or a level tag.

    Found from its end, not by a regex search along the line: `NCCL `, the ` [dev]` before it, and the
    `host:pid:tid` token before that (str.find and one anchored match: ~0.2 us where a search took 2).
    """
    m = _MPI_RANK_NCCL.match(body) if body[:1] == "[" else None
    if m:
        return (m.group(2), int(m.group(1))) if plausible_host(m.group(2)) else (None, None)
    at = body.find("NCCL ", 0, 240)
    dev = body.rfind(" [", 0, at) if at > 0 else -1
    if dev > 0:
        start = body.rfind(" ", 0, dev) + 1
        m = _NCCL.match(body, start) or _NCCL_NO_PID.match(body, start)
        if m and plausible_host(m.group(1)):
            return m.group(1), None
    return None, None


def _slurm_host(body: str) -> tuple[str | None, int | None]:
    at = body.find("srun: ")
    if at >= 0:
        m = _SRUN.match(body, at)
        if m:
            tasks = m.group(2)
            return m.group(1) or m.group(3) or m.group(4), small_int(tasks) if tasks else None
    if "***" in body:
        m = _STEPD.search(body)
        if m:
            return m.group(1), None
    return None, None


def _node_in_body(body: str, reports: bool = True) -> tuple[str | None, int | None]:
    """The printing host from Ray's, syslog's or NCCL's prefix (and a rank where the format gives one), else,
    with `reports`, the host a Slurm report names (srun's task reports give the task id too)."""
    first = body[:1]
    if first == "(":
        return _behind_ray(body)
    m = None
    if first.isdigit() and "T" in body[:11]:
        m = _ISO_SYSLOG.match(body)
    elif first.isupper():
        m = _SYSLOG.match(body)
    if m is None:
        m = _NCCL.match(body) or (_UCX.match(body) if first == "[" else None)
    if m is not None:
        return (m.group(1), None) if plausible_host(m.group(1)) else (None, None)
    if (first == "[" and body[1:2].isdigit()) or body.find("NCCL ", 0, 240) > 0:
        host, rank = _nccl_further_in(body)
        if host:
            return host, rank
    if reports and ("srun: " in body or "***" in body):
        return _slurm_host(body)
    return None, None


def printer_node(text: str) -> str | None:
    """The host that printed the line, read off its prefixes only, never a host its message reports on."""
    pos, node, *_ = _peel(text)
    return node or _node_in_body(text[pos:], reports=False)[0]


def attribute_line(text: str) -> Attribution:
    """Node, global and local rank as far as the line itself says (used on hits, not on every line)."""
    pos, node, rank, label, local = _peel(text)
    if rank is None:
        m = _ANYWHERE.search(text, pos, pos + 400)  # behind a timestamp or a \r-less progress bar
        if m:
            rank = int(m.group(1) or m.group(2))
    body_node, body_rank = _node_in_body(text[pos:])
    node = node or body_node
    if rank is None:
        rank = body_rank
    if rank is None:
        m = _MSG_RANK.search(text, pos)
        if m:
            rank = int(m.group(1) or m.group(2))
    if rank is None and local is None:
        # `3: [default5]:` is torchrun under srun, one task per node: 3 is the node's index, 5 a local rank,
        # neither a global rank. A bare label (one srun task per GPU) is srun's global task id.
        rank = label
    if node is None and rank is None and local is None:
        return NONE
    return Attribution(node, rank, local)


# ---------------------------------------------------------------------------------------------------
# File names: `node17.out`, `gpu-node-003/stdout.log`, `rank_3.out`, `slurm-1234-3.out`, ...
_EXTS = _words("log out err txt gz zst bz2 xz lz4 stdout stderr json jsonl")
_SLURM_FILE = re.compile(r"slurm-\d+(?:[-_.](\d+))?", re.I)
_RANK_NAME = re.compile(r"(?<![a-z])(local[-_]?)?rank[-_]?(\d{1,7})(?!\d)", re.I)
_NODE_WORDS = r"(?:node|host|compute|dgx|hgx|worker|server|machine|ip|cn|nid|gpu)"
_NODE_NAME = re.compile(r"(" + _NODE_WORDS + r")(?![a-z])[a-z0-9_-]*?(\d+)", re.I)
_POD_NAME = re.compile(r"[a-z0-9][a-z0-9-]*-(?:worker|master|launcher)-\d+", re.I)
_RACK_NODE = re.compile(r"[a-z]{1,3}\d{1,4}[a-z]{1,3}\d{1,4}", re.I)  # rack/chassis/node names: r34n00, c12n3
_DASHED = re.compile(r"([a-z][a-z0-9]*)(?:-[a-z0-9]+)+-\d{2,}", re.I)
_MIXED = re.compile(r"(?:^|-)(?=[a-z0-9]*[a-z])(?=[a-z0-9]*\d)[a-z0-9]+(?:-|$)", re.I)  # `a100`
_NOT_NODE_WORDS = _NOT_HOST_STEMS | _words(
    "output outputs log logs tmp data model ckpt checkpoint events wandb tb llama gpt bert resnet vit qwen mistral"
    " mixtral gemma opt bloom falcon deepseek t5 slurm"
)


def _file_stem(name: str) -> str:
    parts = name.split(".")
    while len(parts) > 1 and parts[-1].lower() in _EXTS:
        parts.pop()
    return ".".join(parts)


# What kind of log a file is, written before or after the host: `kernel-node07.log`, `dgx-h100-17_kernel.log`.
_KINDS = r"(?:kernel|dmesg|syslog|messages|journal|stdout|stderr|train|nvidia|dcgm|log)"
_KIND_PREFIX = re.compile(r"(?i)^" + _KINDS + r"[-_.]")
_KIND_SUFFIX = re.compile(r"(?i)[-_.]" + _KINDS + r"$")
# HPE Cray EX names a node by cabinet, chassis, slot, board and node: x1000c0s1b0n0.
_XNAME = re.compile(r"x\d{1,4}c\d{1,2}s\d{1,2}b\d{1,2}n\d{1,2}", re.I)
_SEGMENT_SEP = re.compile(r"[_.]")


def _node_from_name(name: str) -> str | None:
    kind = _KIND_PREFIX.match(name) or _KIND_SUFFIX.search(name)
    if kind:
        rest = name[kind.end() :] if kind.start() == 0 else name[: kind.start()]
        return _node_from_name(rest) if rest else None
    if _IPV4.fullmatch(name):
        return name
    short = name.split(".", 1)[0]
    m = _NODE_NAME.fullmatch(short)
    if m:
        return short if _host_like(m, short) else None
    if _POD_NAME.fullmatch(short) or _RACK_NODE.fullmatch(short) or _XNAME.fullmatch(short):
        return short
    m = _DASHED.fullmatch(short)
    if m and len(m.group(1)) >= 2 and m.group(1).lower() not in _NOT_NODE_WORDS and _MIXED.search(short):
        return short
    return _node_segment(name)


def _host_like(m: re.Match[str], name: str) -> bool:
    """`gpu0.log` / `cn1` are more often per-device logs than hosts; host names carry 2+ digits."""
    return m.group(1).lower() not in ("gpu", "cn", "nid", "ip") or len(m.group(2)) >= 2 or "-" in name


def _node_segment(name: str) -> str | None:
    """A host word joined to the rest of the name by `_` or `.`: `job.4242.node017`, `train_log_node-3` (a
    script's `${SLURM_JOB_ID}.$(hostname)` or `..._node-${NODE_RANK}`). Only the node words count here, never
    a dashed or mixed name: `run_a100-07` is more often an experiment than a machine."""
    parts = _SEGMENT_SEP.split(name)
    for part in parts if len(parts) > 1 else []:
        m = _NODE_NAME.fullmatch(part)
        if m and _host_like(m, part):
            return part
    return None


def _rank_from_name(name: str) -> int | None:
    m = _SLURM_FILE.fullmatch(name)
    if m:
        return small_int(m.group(1)) if m.group(1) else None
    m = _RANK_NAME.search(name)
    return int(m.group(2)) if m and not m.group(1) else None


def attribution_from_path(path: str) -> Attribution:
    """Node/rank from a file name or its nearest parent folders; generic names give nothing."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts:
        return NONE
    names = [_file_stem(parts[-1])] + parts[-5:-1][::-1]  # the file first, then folders, nearest first
    node: str | None = None
    rank: int | None = None
    for name in names:
        if rank is None:
            rank = _rank_from_name(name)
        if node is None and not _SLURM_FILE.fullmatch(name):
            host = _RANK_NAME.sub("", name).strip("-_.")  # `node07-rank3`: the host is node07
            node = _node_from_name(host) if host else None
    return Attribution(node, rank) if node is not None or rank is not None else NONE

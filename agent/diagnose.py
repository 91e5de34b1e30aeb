"""The deterministic diagnosis: one root cause over its symptoms, where it happened, and the proof.

Each failure signal is scored by its role (root cause over symptom), the specificity its rule declares
(priority), whether it came first in time, whether it is local to a few nodes/ranks, and whether it sits where
progress stopped first. The class of the best signal wins; its events name the faulty nodes and ranks and
supply the evidence. Context signals (outlived by training, hints, teardown) never compete; the summary may
still name a hardware one. A verdict of a structural path (a traceback, a trend, the progress timeline) says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from crashcart.agent.actions import refined_action
from crashcart.agent.events import CollectiveTimeoutEvent, Event, FailureEvent, ProgressEvent, Signal, XidEvent
from crashcart.agent.gpu_ranks import gpu_ranks
from crashcart.agent.hangs import describe as describe_hang
from crashcart.agent.host_headers import header_hosts
from crashcart.agent.models import Alternative, Diagnosis
from crashcart.agent.salience import ERRORISH, RARE_COUNT, template_totals
from crashcart.agent.timeline import Timeline, TimelineIndex, first_to_stop, timelines
from crashcart.knowledge.records import Evidence, rank_place
from crashcart.knowledge.runbooks import mitigation_steps
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, HARDWARE_CLASSES, FailureClass, Role, Stage
from crashcart.knowledge.xid import xid_info
from crashcart.parsers.attribution import strip_prefixes
from crashcart.parsers.models import FileScan

ROLE_WEIGHT = {Role.ROOT_CAUSE: 200.0, Role.SYMPTOM: 100.0, Role.CONTEXT: 0.0}
FIRST_BONUS = 20.0  # the first root cause in time beats the errors it caused
LOCAL_BONUS = 5.0  # a signal on a few nodes/ranks beats one every rank prints
STOP_BONUS = 15.0  # a signal of the rank that stopped progressing first, soon after its last step (< FIRST_BONUS)
NEAR_CADENCES = 50  # "right after": within this many of the rank's logging intervals...
NEAR_SECONDS = 900.0  # ... or this long, whichever is more
CLOSE_MARGIN = 10.0  # a runner-up class this close lowers confidence
MAX_EVIDENCE = 8
DETAIL_CHARS = 160  # of the deciding line, quoted in the summary of a structural verdict
LOCATE_MARGIN = 15  # root causes this much weaker than the strongest do not name nodes of their own
# Failures of the whole job: the ranks that print them are its loggers, not its culprits.
JOB_WIDE_CLASSES = frozenset({FailureClass.LOSS_DIVERGENCE, FailureClass.CANCELLED})
# Rule-id prefixes of the structural paths, and how the summary names each.
STRUCTURE_PATHS = {
    "traceback.": "the traceback",
    "trend.host_": "the host memory readings",  # first match wins: the specific prefix before "trend."
    "trend.": "the loss trend",
    "timeline.hang_stack": "the stack dumps",
    "timeline.": "the progress timeline",
}


@dataclass(frozen=True)
class _Scored:
    score: float
    order: int
    event: Signal


def diagnose(events: Sequence[Event], scans: Sequence[FileScan], lines: Sequence[Timeline] | None = None) -> Diagnosis:
    """Decide one diagnosis from the ordered event sequence (and the scans, for unknown cases); `lines` are the
    scans' timelines when the caller has them already."""
    every = [e for e in events if isinstance(e, (FailureEvent, XidEvent, CollectiveTimeoutEvent))]
    signals = [e for e in every if e.role is not Role.CONTEXT]
    scored = _score(signals, scans, _failure_point(lines if lines is not None else timelines(scans)))
    if not scored:
        return _unknown(scans, every)
    best_by_class: dict[FailureClass, _Scored] = {}
    for item in scored:
        held = best_by_class.get(item.event.failure_class)
        if held is None or (item.score, -item.order) > (held.score, -held.order):
            best_by_class[item.event.failure_class] = item
    ranking = sorted(best_by_class.values(), key=lambda s: (-s.score, s.order))
    top = ranking[0]
    if top.event.failure_class is FailureClass.UNKNOWN:
        return _unknown(scans, [s.event for s in scored])
    chosen = [s.event for s in scored if s.event.failure_class is top.event.failure_class]
    progress = [e for e in events if isinstance(e, ProgressEvent)]
    return _build(top, chosen, ranking, every, progress, scans)


def _score(signals: list[Signal], scans: Sequence[FileScan], stop: _StopPoint | None) -> list[_Scored]:
    roots = [e for e in signals if e.role is Role.ROOT_CAUSE]
    first_class = _first_class(roots)
    places = _all_places(scans)
    by_class: dict[FailureClass, set[str]] = {}
    for event in signals:
        by_class.setdefault(event.failure_class, set()).add(_place(event))
    scored = []
    for order, event in enumerate(signals):
        score = ROLE_WEIGHT[event.role] + event.priority
        if event.role is Role.ROOT_CAUSE and event.failure_class is first_class:
            score += FIRST_BONUS
        if len(places) >= 3 and len(by_class[event.failure_class]) <= len(places) // 2:
            score += LOCAL_BONUS
        if stop is not None and stop.near(event):
            score += STOP_BONUS
        scored.append(_Scored(score, order, event))
    return scored


@dataclass(frozen=True)
class _StopPoint:
    """Where progress stopped first: the printer that stopped, and the index that says whose lines are its."""

    line: Timeline
    index: TimelineIndex

    def near(self, event: Signal) -> bool:
        """The event is the stopped printer's, printed after its last progress and soon after it."""
        owners, same_file = self.index.owners(event.file, event.node, event.rank)
        if self.line not in owners:
            return False
        last = self.line.last
        if same_file and event.line <= last.line:
            return False
        if event.time is None or last.time is None:
            return same_file
        window = max(NEAR_SECONDS, NEAR_CADENCES * (self.line.cadence or 0.0))
        return 0 <= (event.time - last.time).total_seconds() <= window


def _failure_point(lines: Sequence[Timeline]) -> _StopPoint | None:
    first = first_to_stop(lines)
    return _StopPoint(first, TimelineIndex(lines)) if first is not None else None


def _first_class(roots: list[Signal]) -> FailureClass | None:
    """The class of the first root cause, if it provably came before every root cause of other classes."""
    if not roots:
        return None
    first = roots[0]
    others = [e for e in roots if e.failure_class is not first.failure_class]
    if others and all(_before(first, e) for e in others):
        return first.failure_class
    return None


def _before(a: Signal, b: Signal) -> bool:
    """a happened before b: by timestamps when both have one, else by line order within one file."""
    if a.time is not None and b.time is not None:
        return a.time < b.time
    return a.file == b.file and a.line < b.line


def _place(event: Signal | ProgressEvent) -> str:
    return f"{event.node or ''}/{event.rank if event.rank is not None else ''}"


def _all_places(scans: Sequence[FileScan]) -> set[str]:
    """Every node/rank the logs show, so 'local to a few' can be judged."""
    places = set()
    for scan in scans:
        for stat in scan.templates:
            places.add(f"{stat.node or ''}/{stat.rank if stat.rank is not None else ''}")
    return places


def _build(
    top: _Scored,
    chosen: list[Signal],
    ranking: list[_Scored],
    every: list[Signal],
    progress: list[ProgressEvent],
    scans: Sequence[FileScan],
) -> Diagnosis:
    cls = top.event.failure_class
    signals = [e for e in every if e.role is not Role.CONTEXT]
    nodes, ranks = _faulty(cls, chosen, signals, scans)
    iteration = _iteration(top.event, progress, nodes)
    stage = _stage(top.event, iteration)
    path = _structure_path(top.event)
    summary = _summary(top.event, nodes, ranks, stage, iteration, signals)
    summary += _outlived(every) + (f"; from {path}: {_structure_detail(top.event, scans)}" if path else "")
    action, steps = refined_action(top.event, scans)
    return Diagnosis(
        failure_class=cls,
        action=action,
        confidence=_confidence(top, ranking),
        summary=summary,
        faulty_nodes=_places(nodes, ranks, chosen),
        faulty_ranks=ranks,
        stage=stage,
        iteration=iteration,
        evidence=_evidence(top.event, chosen, signals),
        mitigation=_xid_step(top.event) + steps + mitigation_steps(cls, nodes),
        decided_by="structure" if path else "rules",
        alternatives=[Alternative(failure_class=s.event.failure_class, score=round(s.score, 1)) for s in ranking[1:4]],
    )


def _places(nodes: list[str], ranks: list[int], chosen: list[Signal]) -> list[str]:
    """The faulty nodes; with no host known for the faulty ranks, the ranks as places ("rank 12")."""
    if nodes or not ranks or any(e.node for e in chosen if e.rank in ranks):
        return nodes
    return [rank_place(rank) for rank in ranks]


def _structure_path(event: Signal) -> str | None:
    """Which structural path decided, by the winning event's rule id; None for a signature."""
    return next((name for prefix, name in STRUCTURE_PATHS.items() if event.rule_id.startswith(prefix)), None)


def _structure_detail(event: Signal, scans: Sequence[FileScan]) -> str:
    if isinstance(event, CollectiveTimeoutEvent) and event.rule_id.startswith("timeline."):
        return describe_hang(event, scans)
    text = strip_prefixes(event.text).strip()
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def _outlived(every: list[Signal]) -> str:
    """A clause for the errors training went on after: hardware ones by name (worth a look at the node), the
    rest as a count."""
    survived = [e for e in every if e.demoted == "survived"]
    hardware = [e for e in survived if e.failure_class in HARDWARE_CLASSES]
    if hardware:
        named = ", ".join(dict.fromkeys(_outlived_label(e) for e in hardware[:3]))
        return f"; training outlived {named} (survived, not the cause: worth a check)"
    return f"; training outlived {len(survived)} earlier error(s)" if survived else ""


def _outlived_label(event: Signal) -> str:
    where = event.node or (f"rank {event.rank}" if event.rank is not None else event.file)
    what = f"XID {event.xid}" if isinstance(event, XidEvent) else f"a {event.failure_class.value} error"
    return f"{what} on {where}"


def _xid_step(event: Signal) -> list[str]:
    """For an XID, the table's own operator action for that code comes first."""
    info = xid_info(event.xid) if isinstance(event, XidEvent) else None
    return [f"XID {info.code} ({info.catalog_bucket}): {info.action}"] if info else []


def _confidence(top: _Scored, ranking: list[_Scored]) -> float:
    event = top.event
    base = 0.55 + 0.4 * event.priority / 100 if event.role is Role.ROOT_CAUSE else 0.3 + 0.3 * event.priority / 100
    if len(ranking) > 1 and top.score - ranking[1].score < CLOSE_MARGIN:
        base -= 0.15
    return round(max(0.05, min(base, 0.97)), 2)


def _faulty(
    cls: FailureClass, chosen: list[Signal], signals: list[Signal], scans: Sequence[FileScan]
) -> tuple[list[str], list[int]]:
    """Nodes/ranks where the root cause shows, when it is local (or the job has just one)."""
    if cls is FailureClass.COLLECTIVE_TIMEOUT:
        named = [e for e in chosen if e.rule_id.startswith("timeline.") and e.rank is not None]
        hung = sorted({e.rank for e in named if e.rank is not None})
        if hung:  # the hang's outlier (its stack differs) or the rank that stopped first
            return list(dict.fromkeys(e.node for e in named if e.node)), hung
        return [], _silent_ranks(chosen, scans)
    if cls in JOB_WIDE_CLASSES:
        return [], []
    roots = [e for e in chosen if e.role is Role.ROOT_CAUSE] or chosen
    strongest = max(e.priority for e in roots)
    roots = [e for e in roots if e.priority >= strongest - LOCATE_MARGIN]  # weak echoes do not add nodes
    accused = [e for e in roots if e.names_node]  # "Node failure on X" outranks the host that printed it
    nodes = list(dict.fromkeys(e.node for e in accused or roots if e.node))
    if not nodes and cls in HARDWARE_CLASSES:  # a job mail's host, or the prompt nvidia-smi ran at
        nodes = header_hosts(roots, scans)
    ranks = list(dict.fromkeys(e.rank for e in roots if e.rank is not None))
    if not ranks and cls is FailureClass.GPU_HARDWARE:  # a kernel line: its GPU's PCI address, in NCCL's lines
        ranks = gpu_ranks(roots, scans)
    all_nodes = {s.node for scan in scans for s in scan.templates if s.node} | {e.node for e in signals if e.node}
    all_ranks = {s.rank for scan in scans for s in scan.templates if s.rank is not None}
    all_ranks |= {e.rank for e in signals if e.rank is not None}
    local_nodes = cls in HARDWARE_CLASSES or len(all_nodes) <= 1 or len(nodes) < len(all_nodes)
    local_ranks = len(all_ranks) <= 1 or len(ranks) < len(all_ranks)
    return (nodes if local_nodes else []), (sorted(ranks) if local_ranks else [])


def _silent_ranks(timeouts: list[Signal], scans: Sequence[FileScan]) -> list[int]:
    """Ranks the logs show that did not report the timeout the others did: the likely laggards."""
    timed_out = {e.rank for e in timeouts if e.rank is not None}
    seen = {s.rank for scan in scans for s in scan.templates if s.rank is not None}
    silent = seen - timed_out
    if timed_out and 0 < len(silent) <= max(1, len(seen) // 4):
        return sorted(silent)
    return []


def _iteration(event: Signal, progress: list[ProgressEvent], nodes: list[str]) -> int | None:
    """The last iteration reported before the failure, preferring the faulty node's own."""
    own = [p for p in progress if p.node == event.node and p.rank == event.rank]
    mine = own or [p for p in progress if p.node in nodes] or progress
    return max((p.iteration for p in mine), default=None)


_CHECKPOINT_WORDS = re.compile(r"(?i)checkpoint|torch\.save|save_pretrained|\.pt\b|\.ckpt\b|safetensors")
_EVAL_WORDS = re.compile(r"(?i)\beval(uat(e|ion))?\b|validation")


def _stage(event: Signal, iteration: int | None) -> Stage | None:
    """Where in the job's life it failed: a rule's own stage, else words on the line, else progress."""
    if event.stage is not None:
        return event.stage
    if _CHECKPOINT_WORDS.search(event.text):
        return Stage.CHECKPOINT
    if _EVAL_WORDS.search(event.text):
        return Stage.EVALUATION
    if iteration is not None:
        return Stage.TRAINING
    return None


def _evidence(primary: Signal, chosen: list[Signal], signals: list[Signal]) -> list[Evidence]:
    """The primary line, the other lines of its class, then the strongest lines of other classes."""
    picked: list[Signal] = [primary]
    seen = {(primary.rule_id, primary.node, primary.rank)}
    lines = {(primary.file, primary.line)}  # two rules may fire on one line: show it once
    others = sorted(
        (e for e in signals if e.failure_class is not primary.failure_class),
        key=lambda e: -(ROLE_WEIGHT[e.role] + e.priority),
    )
    for event in [*chosen, *others]:
        key = (event.rule_id, event.node, event.rank)
        if key in seen or (event.file, event.line) in lines or len(picked) >= MAX_EVIDENCE:
            continue
        if event.failure_class is not primary.failure_class and len(picked) >= MAX_EVIDENCE - 2:
            continue
        seen.add(key)
        lines.add((event.file, event.line))
        picked.append(event)
    return [
        Evidence(
            file=e.file, line=e.line, text=e.text, node=e.node, rank=e.rank, time=e.time, rule_id=e.rule_id, role=e.role
        )
        for e in picked
    ]


_TITLES = {
    FailureClass.GPU_HARDWARE: "GPU hardware failure",
    FailureClass.NETWORK: "network (fabric) failure",
    FailureClass.COLLECTIVE_TIMEOUT: "collective timeout with no deeper cause visible",
    FailureClass.CUDA_ERROR: "CUDA runtime error",
    FailureClass.NODE_FAILURE: "node failure",
    FailureClass.GPU_OOM: "GPU out of memory",
    FailureClass.HOST_OOM: "host (CPU) memory exhausted",
    FailureClass.STORAGE: "storage / I/O failure",
    FailureClass.LOSS_DIVERGENCE: "loss divergence (NaN/Inf)",
    FailureClass.CODE_BUG: "bug in the training code",
    FailureClass.CONFIG_ERROR: "configuration error",
    FailureClass.ENVIRONMENT: "software environment mismatch",
    FailureClass.DATA_ERROR: "bad training data",
    FailureClass.CANCELLED: "job cancelled or preempted",
    FailureClass.UNKNOWN: "no known failure signature",
}


def _summary(
    event: Signal,
    nodes: list[str],
    ranks: list[int],
    stage: Stage | None,
    iteration: int | None,
    signals: list[Signal],
) -> str:
    where = []
    if nodes:
        where.append("node " + ", ".join(nodes[:4]) + (" …" if len(nodes) > 4 else ""))
    if ranks:
        where.append("rank " + ", ".join(map(str, ranks[:4])) + (" …" if len(ranks) > 4 else ""))
    parts = [_TITLES[event.failure_class]]
    if where:
        parts.append("on " + " / ".join(where))
    if isinstance(event, XidEvent):
        info = xid_info(event.xid)
        parts.append(f"(XID {event.xid}: {info.meaning})" if info else f"(XID {event.xid})")
    if stage is not None:
        parts.append(f"during {stage.value}" + (f" at iteration {iteration}" if iteration is not None else ""))
    symptoms = [e for e in signals if e.role is Role.SYMPTOM and e.failure_class is not event.failure_class]
    victim_nodes = {e.node for e in symptoms if e.node and e.node not in nodes}
    victim_ranks = {e.rank for e in symptoms if e.rank is not None and e.rank not in ranks}
    if victim_nodes:
        parts.append(f"; {len(victim_nodes)} other node(s) show only symptoms")
    elif victim_ranks:
        parts.append(f"; {len(victim_ranks)} other rank(s) show only symptoms")
    return " ".join(parts).replace(" ;", ";")


def _unknown(scans: Sequence[FileScan], signals: Sequence[Signal] = ()) -> Diagnosis:
    """Too little evidence to name a class: say so, and show the lines an operator should read first."""
    evidence = [
        Evidence(
            file=e.file, line=e.line, text=e.text, node=e.node, rank=e.rank, time=e.time, rule_id=e.rule_id, role=e.role
        )
        for e in list(signals)[: MAX_EVIDENCE // 2]
    ]
    evidence += _suspicious_lines(scans, MAX_EVIDENCE - len(evidence))
    return Diagnosis(
        failure_class=FailureClass.UNKNOWN,
        action=DEFAULT_ACTION[FailureClass.UNKNOWN],
        confidence=0.2 if evidence else 0.05,
        summary=_TITLES[FailureClass.UNKNOWN] + ("; the rarest error-like lines are shown" if evidence else ""),
        evidence=evidence,
        mitigation=mitigation_steps(FailureClass.UNKNOWN, []),
        decided_by="none",
    )


def _suspicious_lines(scans: Sequence[FileScan], limit: int) -> list[Evidence]:
    """Rare error-like templates (first line of each), then each file's last line."""
    totals = template_totals(scans)
    rare = [
        stat
        for scan in scans
        for stat in scan.templates
        if totals[stat.template_id] <= RARE_COUNT and ERRORISH.search(stat.template)
    ]
    rare.sort(key=lambda s: (s.first.time is None, s.first.time or 0, s.first.file, s.first.line))
    lasts = [max(scan.templates, key=lambda s: s.last.line).last for scan in scans if scan.templates]
    refs = [s.first for s in rare] + lasts
    out: list[Evidence] = []
    seen: set[tuple[str, int]] = set()
    for ref in refs:
        if len(out) >= limit or (ref.file, ref.line) in seen:
            continue
        seen.add((ref.file, ref.line))
        out.append(Evidence(file=ref.file, line=ref.line, text=ref.text, node=ref.node, rank=ref.rank, time=ref.time))
    return out

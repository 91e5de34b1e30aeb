"""A generated job written as it runs: the generator's lines appended to the job's files at a pace, not at once.

`crashcart watch` follows logs while they grow; to measure it (how soon a root cause is reported, whether a stall
is seen, whether memory stays flat over hours of lines) something has to write like a running job does. This
writes the job of `crashcart generate` (evals/generator.py: the same plan, launch preamble, iteration lines and
fault, every line sourced there) one iteration at a time into OUT/logs, every file at once, sleeping `pace_s`
between iterations; then it ends as asked: the scenario's fault, its symptoms and the teardown (`fault`), or
nothing more (`stall`), the faulty node's ranks stopped a few iterations before the others, as a hang starts (one
rank stuck, its peers blocked in the next collective). Standard output gets one JSON line when the fault's first
line is on disk: the file, the line and the wall time it was written, which a test measures the report against.

    python -m crashcart.evals.live OUT --nodes 4 --scenario xid79 --fault-node 2 --iterations 200 --pace 0.02
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO, Literal

from crashcart.evals.generator import LOGS, JobSpec, file_plans, plan_job
from crashcart.evals.logends import events_text, head_events, tail_events
from crashcart.evals.logtext import BLOCK, FilePlan, JobPlan, body_chunks

ITERATION_MARK = "] iteration "  # Megatron's iteration line opens each iteration's lines (logtext._ITER)
MAX_EVENT_PAUSE_S = 1.0  # the fault's events are paced like the iterations, and never more than this apart
STALL_LEAD = 3  # in a stall, the faulty node's ranks stop this many iterations before the rest (which then wait)


def write_live(
    out: Path,
    spec: JobSpec,
    *,
    iterations: int,
    pace_s: float,
    end: Literal["fault", "stall"] = "fault",
) -> None:
    """Write the job into out/logs as it would grow: preamble, `iterations` iterations one every `pace_s`, then
    the end. The files are appended to, never rewritten; memory holds one block of iterations whatever their number."""
    plan = plan_job(spec, iterations)
    files = file_plans(plan)
    logs = out / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        handles = {fp.name: stack.enter_context(open(logs / fp.name, "ab")) for fp in files}
        for fp in files:
            _write(handles[fp.name], events_text(plan, fp, head_events(plan)))
        late = _stopping_early(plan, files) if end == "stall" else set()
        began = time.monotonic()
        for k, units in enumerate(iteration_texts(plan, files)):
            for fp, text in units:
                if not (fp.name in late and k >= iterations - STALL_LEAD):
                    _write(handles[fp.name], text)
            time.sleep(max(0.0, began + (k + 1) * pace_s - time.monotonic()))  # a steady cadence, as a job keeps
        if end == "fault":
            _fault(plan, files, handles, pace_s / plan.iter_s)


def _stopping_early(plan: JobPlan, files: list[FilePlan]) -> set[str]:
    """The files of the faulty node's ranks, which stop STALL_LEAD iterations before the others in a stall."""
    node = plan.fault_node if plan.fault_node is not None else 0
    return {fp.name for fp in files if fp.ranks and all(r // plan.gpus_per_node == node for r in fp.ranks)}


def iteration_texts(plan: JobPlan, files: list[FilePlan]) -> Iterator[list[tuple[FilePlan, str]]]:
    """Each iteration's text of every file, a block of BLOCK iterations rendered at a time."""
    for lo in range(0, plan.n_iters, BLOCK):
        hi = min(lo + BLOCK, plan.n_iters)
        split = [(fp, _units("".join(body_chunks(plan, fp, lo, hi)), hi - lo)) for fp in files]
        for k in range(hi - lo):
            yield [(fp, units[k]) for fp, units in split if units[k]]


def _units(text: str, n: int) -> list[str]:
    """A file's text of n iterations cut into n parts: at each iteration line where it has them, else (a kernel
    log's occasional lines) spread evenly over the iterations."""
    lines = text.splitlines(keepends=True)
    units = [""] * n
    if any(ITERATION_MARK in line for line in lines):
        k = 0
        for i, line in enumerate(lines):
            if ITERATION_MARK in line and i > 0:
                k = min(k + 1, n - 1)
            units[k] += line
        return units
    for i, line in enumerate(lines):
        units[i * n // max(len(lines), 1)] += line
    return units


def _fault(plan: JobPlan, files: list[FilePlan], handles: Mapping[str, BinaryIO], scale: float) -> None:
    """The tail events in time order across the files, paced as the job's clock scaled down; the first one's first
    line is announced on stdout once written."""
    events = sorted(tail_events(plan), key=lambda e: e.t)
    told, last_t = False, events[0].t if events else 0.0
    for event in events:
        time.sleep(min(MAX_EVENT_PAUSE_S, max(0.0, (event.t - last_t) * scale)))
        last_t = event.t
        for fp in files:
            text = events_text(plan, fp, [event])
            if not text:
                continue
            _write(handles[fp.name], text)
            if not told:
                told = True
                line = text.splitlines()[0]
                print(json.dumps({"file": fp.name, "line": line, "written": time.time()}), flush=True)


def _write(fh: BinaryIO, text: str) -> None:
    fh.write(text.encode())
    fh.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crashcart.evals.live", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--scenario", default="xid79")
    parser.add_argument("--fault-node", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between iterations")
    parser.add_argument("--end", choices=["fault", "stall"], default="fault")
    args = parser.parse_args(argv)
    spec = JobSpec(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        total_mb=1,  # unused: the number of iterations is given
        scenario=args.scenario,
        fault_node=args.fault_node,
        seed=args.seed,
    )
    write_live(args.out, spec, iterations=args.iterations, pace_s=args.pace, end=args.end)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`crashcart watch` over a long run: does its memory stay flat while a job writes a gigabyte of logs?

A writer process (crashcart/evals/live.py) appends a generated job's lines (64 nodes by default, one file per node
and a kernel log each) at a steady cadence sized so that --gb arrive in --minutes, then the xid79 fault and the
teardown. `crashcart watch` follows the folder as a user runs it. Every --sample-s the watch process's RSS and CPU
time (from /proc) and the bytes on disk are sampled while the job writes. Reported: the samples, RSS after the
warm-up (the first sample past 10% of the bytes) and at its highest and last, the growth between, the watch's CPU
time, how soon the root cause was read after its line was written, the reports made, and apart, the highest RSS
of the final triage (crashcart.api.triage of every file, once the job has ended: the batch pipeline's memory).

    python benchmarks/soak_watch.py --minutes 10 --gb 1 --out soak.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from crashcart.evals.generator import JobSpec, file_plans, plan_job
from crashcart.evals.live import iteration_texts
from crashcart.evals.logtext import BLOCK

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
TICKS = os.sysconf("SC_CLK_TCK")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="soak_watch", description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--gb", type=float, default=1.0, help="log text written over the run")
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--sample-s", type=float, default=10.0)
    p.add_argument("--out", type=Path, help="also write the results here (JSON)")
    return p.parse_args(argv)


def bytes_per_iteration(spec: JobSpec) -> float:
    """The text one iteration adds to all files together, measured on one rendered block."""
    plan = plan_job(spec, BLOCK)
    return sum(len(text) for units in iteration_texts(plan, file_plans(plan)) for _, text in units) / BLOCK


def proc_usage(pid: int) -> tuple[float, float]:
    """(RSS in MB, CPU seconds) of a process, from /proc."""
    with open(f"/proc/{pid}/statm") as fh:
        rss_pages = int(fh.read().split()[1])
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return rss_pages * PAGE_KB / 1024, (int(fields[11]) + int(fields[12])) / TICKS


def on_disk(logs: Path) -> int:
    return sum(p.stat().st_size for p in logs.iterdir() if p.is_file())


def pump(pipe: IO[str], into: queue.Queue[tuple[float, str]]) -> None:
    for line in pipe:
        into.put((time.time(), line))


def soak(root: Path, minutes: float, gb: float, nodes: int, sample_s: float) -> dict[str, Any]:
    """Run the writer and the watch over `root`, sampling the watch; the figures and the samples."""
    spec = JobSpec(nodes=nodes, gpus_per_node=8, total_mb=1, scenario="xid79", fault_node=nodes // 2)
    iterations = max(1, round(gb * 1e9 / bytes_per_iteration(spec)))
    pace = minutes * 60 / iterations
    logs = root / "logs"
    logs.mkdir(parents=True)
    err = root / "watch.err"
    watch = subprocess.Popen(
        [sys.executable, "-m", "crashcart.cli", "watch", str(logs), "-v", "--idle", "5", "--stall-after", "3600"],
        stdout=subprocess.PIPE,
        stderr=err.open("w"),
        text=True,
    )
    reports: queue.Queue[tuple[float, str]] = queue.Queue()
    reader = threading.Thread(target=pump, args=(watch.stdout, reports), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while "crashcart: watching" not in err.read_text():
        if watch.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"crashcart watch did not start: {err.read_text()[-500:]}")
        time.sleep(0.1)
    writer_argv = [sys.executable, "-m", "crashcart.evals.live", str(root), "--nodes", str(nodes)]
    writer_argv += ["--fault-node", str(spec.fault_node), "--iterations", str(iterations), "--pace", f"{pace:.6f}"]
    writer = subprocess.Popen(writer_argv, stdout=subprocess.PIPE, text=True)
    began, samples = time.monotonic(), []
    while True:
        time.sleep(sample_s)
        if writer.poll() is not None:  # the job has ended: what follows is the final triage, measured apart
            break
        rss, cpu = proc_usage(watch.pid)
        sample = {"s": round(time.monotonic() - began, 1), "rss_mb": round(rss, 1), "cpu_s": round(cpu, 1)}
        samples.append(sample | {"written_mb": round(on_disk(logs) / 1e6, 1)})
        print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
    assert writer.stdout is not None
    fault = json.loads(writer.stdout.readline())
    triage_rss = 0.0
    while watch.poll() is None:  # the final report: crashcart.api.triage of every file, in the watch process
        with contextlib.suppress(OSError, IndexError):  # it may end between the poll and the read
            triage_rss = max(triage_rss, proc_usage(watch.pid)[0])
        time.sleep(0.2)
    reader.join(timeout=60)
    got = [reports.get() for _ in range(reports.qsize())]
    root_cause = next(json.loads(line) | {"read": t} for t, line in got if json.loads(line)["kind"] == "root_cause")
    total = on_disk(logs)
    warm = next((s for s in samples if s["written_mb"] >= 0.1 * total / 1e6), samples[0])
    later = [s for s in samples if s["s"] >= warm["s"]]
    return {
        "minutes": minutes,
        "nodes": nodes,
        "files": len(list(logs.iterdir())),
        "written_mb": round(total / 1e6, 1),
        "iterations": iterations,
        "pace_s": round(pace, 4),
        "rss_after_warmup_mb": warm["rss_mb"],
        "rss_max_mb": max(s["rss_mb"] for s in later),
        "rss_last_mb": samples[-1]["rss_mb"],
        "rss_growth_after_warmup_mb": round(max(s["rss_mb"] for s in later) - warm["rss_mb"], 1),
        "watch_cpu_s": samples[-1]["cpu_s"],
        "final_triage_rss_max_mb": round(triage_rss, 1),
        "root_cause_after_write_s": round(root_cause["read"] - fault["written"], 3),
        "root_cause_nodes": root_cause["nodes"],
        "reports": [json.loads(line)["kind"] for _, line in got],
        "final": {k: json.loads(got[-1][1])[k] for k in ("failure_class", "nodes", "ended")},
        "watch_exit": watch.returncode,
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="soak-watch-") as tmp:
        results = soak(Path(tmp), args.minutes, args.gb, args.nodes, args.sample_s)
    text = json.dumps(results, indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

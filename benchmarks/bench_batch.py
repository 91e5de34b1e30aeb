"""`crashcart batch` over a tree of generated failed jobs: throughput, memory, accuracy, and the resume.

Generates N jobs (mixed scenarios, layouts and compression; sizes from ~1 MB to --max-mb, most small and a few
big, ~1.8 GB for the default 200), plus a truncated gzip and an empty job that must not stop the batch. Then:

1. `crashcart batch ROOT --format json`: wall time, jobs/min, MB/s, peak RSS (the batch process and its
   workers, summed, sampled from /proc), and the summary checked against the manifests: each job's class,
   the per-class jobs and GPU-hours, the infrastructure share and the repeat-offender nodes;
2. the same command again: it must triage nothing (resume);
3. one log touched: it must triage that job alone.

    python benchmarks/bench_batch.py --out batch-results.json [--jobs 200 --max-mb 100 --workers 8]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MB = 1e6
START = datetime(2025, 3, 1, tzinfo=UTC)
INFRA_SCENARIOS = ["xid79", "ecc", "ib_link", "node_fail", "storage"]
JOB_SCENARIOS = ["gpu_oom", "host_oom", "nan_loss", "code_bug", "timeout_only", "none"]
BAD_NODES = [(2, 3), (5, 7), (7, 1)]  # (rack, node index): hosts that fail again and again
# A shim for a crashcart whose cli.py does not register `batch` yet.
_SHIM = (
    "from crashcart import cli; from crashcart.cli_batch import batch; "
    "cli.app.command('batch')(batch); import sys; sys.argv[0] = 'crashcart'; cli.main()"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_batch", description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--max-mb", type=float, default=100.0, help="the biggest job's size")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--workers", type=int, default=None, help="crashcart batch --workers (default: its own)")
    p.add_argument("--workdir", type=Path, help="generate here and keep it (default: a temp dir, removed after)")
    p.add_argument("--crashcart", default=None, help="the crashcart command (default: the one beside this Python)")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    return p.parse_args(argv)


# -- the tree ------------------------------------------------------------------------------------------------


def plan_jobs(n: int, max_mb: float, seed: int) -> list[dict[str, Any]]:
    """JobSpec fields per job: most small (1-5 MB), some medium (5-30), a few big (50-max) and mostly infra."""
    rng = random.Random(seed)
    bad = [i for i in range(n) if i % 9 == 4][: 3 * len(BAD_NODES)]  # 2-3 infra failures on each bad node
    specs = []
    for i in range(n):
        u = rng.random()
        lo, hi = (50.0, max_mb) if u < 0.06 or i == 0 else ((5.0, 30.0) if u < 0.26 else (1.0, 5.0))
        mb = max_mb if i == 0 else math.exp(rng.uniform(math.log(lo), math.log(min(hi, max_mb))))
        big = mb >= 50
        scenario = rng.choice(
            INFRA_SCENARIOS if (big and rng.random() < 0.8) or i in bad else INFRA_SCENARIOS + JOB_SCENARIOS * 2
        )
        nodes = rng.choice([16, 24, 32]) if big else rng.choice([2, 4, 8, 12])
        rack, fault = rng.randrange(40), rng.randrange(nodes)
        if i in bad:
            rack, fault = BAD_NODES[bad.index(i) % len(BAD_NODES)]
            nodes = max(nodes, fault + 1)
        specs.append(
            {
                "nodes": nodes,
                "gpus_per_node": 8,
                "total_mb": round(mb, 2),
                "scenario": scenario,
                "fault_node": fault,
                "seed": seed * 1000 + i,
                "start": START.isoformat(),
                "hostname": f"r{rack}n{{:02d}}",
                "layout": rng.choice(["per_node"] * 6 + ["slurm"] + (["per_rank"] if nodes <= 4 else [])),
                "compression": rng.choice(["none"] * 8 + ["gzip", "zstd"]) if mb < 30 else "none",
            }
        )
    return specs


def _generate_one(args: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    from crashcart.evals.generator import JobSpec, generate_job

    out, spec = args
    return json.loads(generate_job(out, JobSpec(**spec), workers=1).model_dump_json())


def generate_tree(root: Path, specs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Write every job (in parallel, largest first) and two broken ones; the manifests by job id."""
    order = sorted(range(len(specs)), key=lambda i: -specs[i]["total_mb"])
    ids = {i: f"cluster-{specs[i]['hostname'][1:].split('n')[0]}/job{i:03d}" for i in range(len(specs))}
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        made = list(pool.map(_generate_one, [(root / ids[i], specs[i]) for i in order], chunksize=1))
    text = b"".join(b"2025-03-01 10:00:%02d INFO step %d loss 2.0\n" % (i % 60, i) for i in range(20000))
    data = gzip.compress(text)
    (root / "broken" / "truncated-gzip" / "logs").mkdir(parents=True)
    (root / "broken" / "truncated-gzip" / "logs" / "node00.log.gz").write_bytes(data[: len(data) // 2])
    (root / "broken" / "no-logs" / "logs").mkdir(parents=True)
    return {ids[i]: m for i, m in zip(order, made, strict=True)}


# -- what the summary must say, from the manifests -----------------------------------------------------------


def expected(manifests: dict[str, dict[str, Any]], infra: set[str]) -> dict[str, Any]:
    """Per-class jobs and GPU-hours, the infrastructure split and the repeat offenders a perfect triage gives."""
    classes: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    nodes: dict[str, list[str]] = defaultdict(list)
    for job_id, m in manifests.items():
        cls = m["failure_class"] or "unknown"
        hours = _gpu_hours(m)
        classes[cls][0] += 1
        classes[cls][1] += hours
        if cls in infra and m["faulty_node"]:
            nodes[m["faulty_node"]].append(job_id)
    infra_hours = sum(h for c, (_, h) in classes.items() if c in infra)
    total_hours = sum(h for _, h in classes.values())
    return {
        "classes": {c: {"jobs": n, "gpu_hours": round(h, 3)} for c, (n, h) in classes.items()},
        "infra_jobs": sum(n for c, (n, _) in classes.items() if c in infra),
        "infra_gpu_hour_share": round(infra_hours / total_hours, 4) if total_hours else 0.0,
        "offenders": sorted(n for n, jobs in nodes.items() if len(jobs) >= 2),
    }


def _gpu_hours(m: dict[str, Any]) -> float:
    if not m["fault_time"]:
        return 0.0
    elapsed = (datetime.fromisoformat(m["fault_time"].replace("Z", "+00:00")) - START).total_seconds()
    return m["spec"]["nodes"] * m["spec"]["gpus_per_node"] * elapsed / 3600


def check(output: dict[str, Any], manifests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per job, and the summary compared with what the manifests say it should be."""
    summary, results = output["summary"], {r["job"]["job_id"]: r for r in output["results"]}
    infra = set(summary["infrastructure_classes"])
    want = expected(manifests, infra)
    wrong, node_misses, node_total = [], [], 0
    for job_id, m in manifests.items():
        d = (results.get(job_id) or {}).get("diagnosis") or {}
        truth = m["failure_class"] or "unknown"
        if d.get("failure_class") != truth:
            wrong.append({"job": job_id, "scenario": m["scenario"], "expected": truth, "got": d.get("failure_class")})
        if m["faulty_node"]:
            node_total += 1
            if m["faulty_node"] not in d.get("faulty_nodes", []):
                node_misses.append(
                    {
                        "job": job_id,
                        "scenario": m["scenario"],
                        "layout": m["spec"]["layout"],
                        "expected": m["faulty_node"],
                        "got": d.get("faulty_nodes"),
                    }
                )
    found = {o["node"] for o in summary["offenders"]}
    got_classes = {c["failure_class"]: {"jobs": c["jobs"], "gpu_hours": c["gpu_hours"]} for c in summary["classes"]}
    return {
        "class_accuracy": round(1 - len(wrong) / len(manifests), 4),
        "misclassified": wrong[:20],
        "faulty_node_hit_rate": round(1 - len(node_misses) / node_total, 4) if node_total else None,
        "faulty_node_misses": node_misses[:20],
        "classes_match": _close(got_classes, want["classes"]),
        "infra_share_match": summary["infrastructure"]["jobs"] == want["infra_jobs"]
        and abs(summary["infrastructure"]["gpu_hour_share"] - want["infra_gpu_hour_share"]) < 1e-3,
        # Extra offenders are possible and not wrong: a diagnosis may name two nodes (both ends of a failed IB
        # link), while a manifest knows only the node the fault was injected on.
        "offenders_expected": want["offenders"],
        "offenders_found": [o["node"] for o in summary["offenders"]],
        "offenders_missing": sorted(set(want["offenders"]) - found),
        "offenders_extra": sorted(found - set(want["offenders"])),
        "errors_expected": ["broken/truncated-gzip"],
        "no_logs_expected": ["broken/no-logs"],
        "errors_found": [p["job_id"] for p in summary["problems"] if p["status"] == "error"],
        "no_logs_found": [p["job_id"] for p in summary["problems"] if p["status"] == "no_logs"],
    }


def _close(got: dict[str, dict[str, float]], want: dict[str, dict[str, float]]) -> bool:
    return got.keys() == want.keys() and all(
        got[c]["jobs"] == want[c]["jobs"] and abs(got[c]["gpu_hours"] - want[c]["gpu_hours"]) < 0.01 for c in want
    )


# -- running crashcart ----------------------------------------------------------------------------------------


def crashcart_cmd(explicit: str | None) -> list[str]:
    """The crashcart beside this Python; through a shim when its cli.py does not register `batch` yet."""
    if explicit:
        return explicit.split()
    beside = Path(sys.executable).parent / "crashcart"
    cmd = [str(beside)] if beside.exists() else [shutil.which("crashcart") or "crashcart"]
    probe = subprocess.run([*cmd, "batch", "--help"], capture_output=True)
    return cmd if probe.returncode == 0 else [sys.executable, "-c", _SHIM]


def _tree_rss(pid: int) -> tuple[int, int]:
    """(summed, largest) resident set of pid and all its descendants, in bytes, from /proc."""
    parents: dict[int, list[int]] = defaultdict(list)
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            parents[int(fields[1])].append(int(entry))
            rss[int(entry)] = int(fields[21]) * page
        except (OSError, ValueError, IndexError):
            continue
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += parents.get(p, [])
    sizes = [rss.get(p, 0) for p in seen]
    return sum(sizes), max(sizes, default=0)


def run_batch_cmd(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run one batch: wall time, peak RSS of the whole process tree (sampled every 0.1 s), its JSON output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        peak = [0, 0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.1):
                total, largest = _tree_rss(proc.pid)
                peak[0], peak[1] = max(peak[0], total), max(peak[1], largest)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = proc.wait()
        stop.set()
        sampler.join()
        wall = time.perf_counter() - began
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    run: dict[str, Any] = {
        "wall_s": round(wall, 2),
        "exit_code": code,
        "peak_rss_total_mb": round(peak[0] / MB, 1),
        "peak_rss_largest_process_mb": round(peak[1] / MB, 1),
        "stderr_tail": stderr[-600:],
    }
    run["output"] = json.loads(stdout) if code == 0 else None
    return run


def _figures(run: dict[str, Any]) -> dict[str, Any]:
    t = run["output"]["summary"]["totals"]
    keep = (
        "jobs",
        "triaged",
        "errors",
        "no_logs",
        "new_jobs",
        "reused",
        "new_bytes",
        "wall_s",
        "jobs_per_min",
        "mb_per_s",
        "gpu_hours",
    )
    return {
        "process_wall_s": run["wall_s"],
        "peak_rss_total_mb": run["peak_rss_total_mb"],
        "peak_rss_largest_process_mb": run["peak_rss_largest_process_mb"],
        **{k: t[k] for k in keep},
    }


def bench(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    specs = plan_jobs(args.jobs, args.max_mb, args.seed)
    began = time.perf_counter()
    manifests = generate_tree(root, specs)
    generated_s = time.perf_counter() - began
    sizes = [m["uncompressed_bytes"] for m in manifests.values()]
    cmd = [
        *crashcart_cmd(args.crashcart),
        "batch",
        str(root),
        "--results",
        str(root / "batch.db"),
        "--format",
        "json",
        "--no-memory",
    ] + (["--workers", str(args.workers)] if args.workers else [])
    env = {**os.environ, "XDG_DATA_HOME": str(root / ".xdg")}  # no personal rule store
    first = run_batch_cmd(cmd, env)
    if first["exit_code"] != 0:
        return {"error": first["stderr_tail"]}
    resume = run_batch_cmd(cmd, env)
    touched = next(iter(manifests))
    log = root / touched / manifests[touched]["files"][0]["name"]
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    third = run_batch_cmd(cmd, env)
    retriaged = sorted({r["job"]["job_id"] for r in third["output"]["results"]} - _ids_reused(third, resume))
    return {
        "tree": {
            "jobs": len(manifests),
            "broken_jobs": 2,
            "log_gb": round(sum(sizes) / 1e9, 2),
            "on_disk_gb": round(sum(m["total_bytes"] for m in manifests.values()) / 1e9, 2),
            "smallest_mb": round(min(sizes) / MB, 2),
            "largest_mb": round(max(sizes) / MB, 2),
            "scenarios": dict(Counter(m["scenario"] for m in manifests.values())),
            "layouts": dict(Counter(m["spec"]["layout"] for m in manifests.values())),
            "compression": dict(Counter(m["spec"]["compression"] for m in manifests.values())),
            "generated_s": round(generated_s, 1),
        },
        "cpus": os.cpu_count(),
        "workers": args.workers or "default",
        "first": _figures(first),
        "check": check(first["output"], manifests),
        "resume": _figures(resume),
        "after_touch": {**_figures(third), "touched": touched, "retriaged": retriaged},
        "summary": {
            k: first["output"]["summary"][k] for k in ("classes", "infrastructure", "other", "deciders", "offenders")
        },
    }


def _ids_reused(third: dict[str, Any], resume: dict[str, Any]) -> set[str]:
    """Jobs whose result the third run returned unchanged from the second."""
    before = {r["job"]["job_id"]: r["triaged_at"] for r in resume["output"]["results"]}
    return {r["job"]["job_id"] for r in third["output"]["results"] if before.get(r["job"]["job_id"]) == r["triaged_at"]}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    temp = None
    root = args.workdir or Path(temp := tempfile.mkdtemp(prefix="crashcart-batch-bench-"))
    try:
        results = bench(root, args)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    text = json.dumps(results, indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0 if "error" not in results else 1


if __name__ == "__main__":
    raise SystemExit(main())

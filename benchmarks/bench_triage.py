"""End-to-end triage throughput on a large multi-node job, against vanilla Drain3 on the same bytes.

Each contender runs in its own child process so its wall time and peak RSS are its own (os.wait4 gives
each child's rusage; RUSAGE_CHILDREN would be the max over all children):

- crashcart: `crashcart triage LOGS --format json`; its diagnosis is checked against manifest.json;
- drain3: `TemplateMiner()` with the default config, `add_log_message` on every line of every file
  (with --drain3-limit-mb, on the first N MB spread over the files, its time extrapolated: it is slow);
- wc: `wc -l` over the files, the floor for reading the bytes at all (uncompressed jobs only).

A child's peak RSS includes this process's RSS at the spawn (Linux counts the pre-exec memory), so this
process stays small (the job is generated in a child too) and reports that floor as job.rss_floor_mb.

    python benchmarks/bench_triage.py --generate --total-mb 1024 --nodes 16 --scenario xid79 --out results.json
    python benchmarks/bench_triage.py /data/generated-job --drain3-limit-mb 200
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

MB = 1e6
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_WORKER_FLAG = "--drain3-worker"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_triage", description=__doc__.split("\n")[0])
    p.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="a job folder (for a generated job, the folder holding manifest.json; its logs/ is triaged)",
    )
    p.add_argument("--generate", action="store_true", help="generate a job first (into --workdir)")
    p.add_argument("--total-mb", type=float, default=1024.0)
    p.add_argument("--nodes", type=int, default=16)
    p.add_argument("--scenario", default="xid79")
    p.add_argument("--fault-node", type=int, default=None, help="default: the middle node")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layout", default="per_node", choices=["per_node", "per_rank", "slurm"])
    p.add_argument("--compression", default="none", choices=["none", "gzip", "zstd"])
    p.add_argument("--workdir", type=Path, help="generate here and keep it (default: a temp dir, removed after)")
    p.add_argument("--crashcart", default=None, help="the crashcart command (default: the one beside this Python)")
    p.add_argument(
        "--drain3-limit-mb",
        type=float,
        default=None,
        help="feed Drain3 only this many MB (spread over the files) and extrapolate its time",
    )
    p.add_argument("--no-drain3", action="store_true", help="skip the Drain3 baseline")
    p.add_argument("--no-wc", action="store_true", help="skip the wc -l baseline")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    args = p.parse_args(argv)
    if (args.path is None) == (not args.generate):
        p.error("give either a job folder or --generate")
    return args


# ----------------------------------------------------------------------------------------------------
# The job: files, sizes, the expected diagnosis.


def job_files(root: Path) -> tuple[Path, list[Path]]:
    """The folder to triage and its log files (a generated job keeps them in logs/, beside its manifest)."""
    logs = root / "logs" if (root / "manifest.json").is_file() and (root / "logs").is_dir() else root
    files = sorted(p for p in logs.rglob("*") if p.is_file() and not p.name.startswith("."))
    return logs, files


def load_manifest(root: Path) -> dict[str, Any] | None:
    path = root / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def open_log(path: Path) -> IO[bytes]:
    """The file's decoded bytes, whatever its compression."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if magic == _ZSTD_MAGIC:
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)  # type: ignore
    return open(path, "rb")


def log_sizes(root: Path, files: list[Path], manifest: dict[str, Any] | None) -> list[int]:
    """Log bytes per file: from the manifest when it has them, else by reading (decompressing) the file."""
    known = {(root / f["name"]).resolve(): f["uncompressed_bytes"] for f in (manifest or {}).get("files", [])}
    sizes = []
    for path in files:
        size = known.get(path.resolve())
        if size is None:
            size = 0
            with open_log(path) as fh:
                while chunk := fh.read(8 << 20):
                    size += len(chunk)
        sizes.append(size)
    return sizes


def byte_limits(sizes: list[int], limit_mb: float | None) -> list[int] | None:
    """Per-file byte budgets adding up to limit_mb, in proportion to each file's size (None: no limit)."""
    total = sum(sizes)
    if limit_mb is None or total == 0 or limit_mb * MB >= total:
        return None
    return [int(limit_mb * MB * s / total) for s in sizes]


# ----------------------------------------------------------------------------------------------------
# Children, each timed and measured on its own.


def run_child(cmd: list[str]) -> dict[str, Any]:
    """Run cmd: its wall time, its own peak RSS (wait4), exit code, stdout and the tail of stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "wall_s": wall,
            "peak_rss_mb": usage.ru_maxrss * 1024 / MB,
            "exit_code": proc.returncode,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace")[-2000:],
        }


def crashcart_cmd(explicit: str | None) -> list[str]:
    if explicit:
        return explicit.split()
    beside = Path(sys.executable).parent / "crashcart"
    return [str(beside)] if beside.exists() else [shutil.which("crashcart") or "crashcart"]


def drain3_worker(files: list[str], limits: list[int] | None) -> dict[str, Any]:
    """In the child: vanilla Drain3 on every line (up to each file's budget); what it saw and built."""
    from drain3 import TemplateMiner

    miner = TemplateMiner()
    lines = nbytes = 0
    began = time.perf_counter()
    for i, name in enumerate(files):
        budget = limits[i] if limits is not None else -1
        carry = b""
        with open_log(Path(name)) as fh:
            while budget != 0 and (chunk := fh.read(4 << 20)):
                parts = (carry + chunk).split(b"\n")
                carry = parts.pop()
                for raw in parts:
                    miner.add_log_message(raw.decode("utf-8", errors="replace"))
                    lines += 1
                    nbytes += len(raw) + 1
                    budget = max(0, budget - len(raw) - 1) if budget > 0 else budget
                    if budget == 0:
                        break
        if carry and budget != 0:
            miner.add_log_message(carry.decode("utf-8", errors="replace"))
            lines, nbytes = lines + 1, nbytes + len(carry)
    return {
        "lines": lines,
        "bytes": nbytes,
        "clusters": len(miner.drain.clusters),
        "process_s": time.perf_counter() - began,
    }


def run_drain3(files: list[Path], limits: list[int] | None) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump({"files": [str(f) for f in files], "limits": limits}, spec)
    try:
        run = run_child([sys.executable, str(Path(__file__).resolve()), _WORKER_FLAG, spec.name])
    finally:
        os.unlink(spec.name)
    if run["exit_code"] == 0:
        run.update(json.loads(run["stdout"]))
    return run


# ----------------------------------------------------------------------------------------------------
# Results: pure functions of the measurements (tested without running anything big).


def _diagnosis(stdout: str) -> dict[str, Any]:
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        return {}
    return report if isinstance(report, dict) else {}


def compose_results(job: dict[str, Any], runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The results record: per contender wall_s, mb_per_s, peak_rss_mb; crashcart's verdict; the ratios."""
    log_mb = job["log_bytes"] / MB
    out: dict[str, Any] = {"job": job}
    for name, run in runs.items():
        row = {"wall_s": run["wall_s"], "peak_rss_mb": run["peak_rss_mb"], "exit_code": run["exit_code"]}
        if name == "drain3" and run.get("bytes"):
            share = run["bytes"] / job["log_bytes"]
            row.update(
                processed_mb=run["bytes"] / MB,
                lines=run["lines"],
                clusters=run["clusters"],
                measured_wall_s=run["wall_s"],
                extrapolated=share < 0.999,
            )
            row["wall_s"] = run["wall_s"] + run["process_s"] * (1 / share - 1)
        if name == "crashcart":
            row.update(_verdict(job, _diagnosis(run["stdout"])))
        if run["exit_code"] != 0:
            row["stderr_tail"] = run["stderr"][-500:]
        row["mb_per_s"] = log_mb / row["wall_s"] if row["wall_s"] > 0 else None
        out[name] = row
    cc, d3 = out.get("crashcart"), out.get("drain3")
    if cc and d3 and d3["wall_s"] > 0 and d3["peak_rss_mb"] > 0:
        out["ratios_crashcart_over_drain3"] = {
            "wall_s": cc["wall_s"] / d3["wall_s"],
            "mb_per_s": (cc["mb_per_s"] or 0) / (d3["mb_per_s"] or 1),
            "peak_rss_mb": cc["peak_rss_mb"] / d3["peak_rss_mb"],
        }
    return out


def _verdict(job: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    diag = report.get("diagnosis") or {}
    got_class, nodes = diag.get("failure_class"), list(diag.get("faulty_nodes") or [])
    want_class, want_node = job.get("expected_class"), job.get("expected_node")
    row: dict[str, Any] = {"failure_class": got_class, "faulty_nodes": nodes, "stats": report.get("stats")}
    if "expected_class" in job:
        row["class_ok"] = got_class == want_class or (want_class is None and got_class in (None, "unknown"))
        row["node_ok"] = want_node in nodes if want_node else not nodes
        row["nodes_exact"] = nodes == ([want_node] if want_node else [])  # no extra nodes blamed either
    return row


def format_table(results: dict[str, Any]) -> str:
    job = results["job"]
    want = job.get("expected_class", "?")
    lines = [
        f"job: {job['path']}  {job['files']} files  {job['log_bytes'] / MB:.1f} MB of logs"
        f" ({job['disk_bytes'] / MB:.1f} MB on disk)  expected: {want} on {job.get('expected_node') or '-'}",
        f"{'contender':<10} {'wall s':>9} {'MB/s':>9} {'peak RSS MB':>12}  note",
    ]
    for name in ("crashcart", "drain3", "wc"):
        row = results.get(name)
        if row is None:
            continue
        note = ""
        if name == "crashcart":
            note = f"{row.get('failure_class')} on {','.join(row.get('faulty_nodes') or []) or '-'}"
            if "class_ok" in row:
                note += f" (class {'ok' if row['class_ok'] else 'WRONG'}, node {'ok' if row['node_ok'] else 'WRONG'})"
        if name == "drain3" and row.get("extrapolated"):
            note = (
                f"extrapolated from {row['processed_mb']:.1f} MB ({row['measured_wall_s']:.1f} s measured;"
                " RSS is for that part only)"
            )
        if row["exit_code"] != 0:
            note += f" EXIT {row['exit_code']}"
        mbps = f"{row['mb_per_s']:.1f}" if row.get("mb_per_s") else "-"
        lines.append(f"{name:<10} {row['wall_s']:>9.2f} {mbps:>9} {row['peak_rss_mb']:>12.1f}  {note}")
    ratios = results.get("ratios_crashcart_over_drain3")
    if ratios:
        lines.append(
            f"crashcart/drain3: wall {ratios['wall_s']:.3f}x, MB/s {ratios['mb_per_s']:.2f}x,"
            f" peak RSS {ratios['peak_rss_mb']:.2f}x"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------


def _generate(args: argparse.Namespace, where: Path) -> int:
    """Generate in a child process, so this process stays small: a child's peak RSS starts at ours."""
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])))
    fault = args.nodes // 2 if args.fault_node is None else args.fault_node
    cmd = [
        sys.executable,
        "-m",
        "crashcart.cli",
        "generate",
        str(where),
        "--nodes",
        str(args.nodes),
        "--total-mb",
        str(args.total_mb),
        "--scenario",
        args.scenario,
        "--fault-node",
        str(fault),
        "--seed",
        str(args.seed),
        "--layout",
        args.layout,
        "--compression",
        args.compression,
    ]
    return subprocess.run(cmd, env=env, stdout=sys.stderr).returncode


def bench(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    logs, files = job_files(root)
    manifest = load_manifest(root)
    sizes = log_sizes(root, files, manifest)
    job: dict[str, Any] = {
        "path": str(logs),
        "files": len(files),
        "log_bytes": sum(sizes),
        "disk_bytes": sum(f.stat().st_size for f in files),
        "rss_floor_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB,
    }
    if manifest is not None:
        job.update(
            expected_class=manifest.get("failure_class"),
            expected_node=manifest.get("faulty_node"),
            scenario=manifest.get("scenario"),
        )
    runs = {"crashcart": run_child([*crashcart_cmd(args.crashcart), "triage", str(logs), "--format", "json"])}
    if not args.no_drain3:  # after crashcart, each in a fresh child
        runs["drain3"] = run_drain3(files, byte_limits(sizes, args.drain3_limit_mb))
    if not args.no_wc and job["log_bytes"] == job["disk_bytes"]:
        runs["wc"] = run_child(["wc", "-l", *map(str, files)])
    return compose_results(job, runs)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_WORKER_FLAG]:
        spec = json.loads(Path(argv[1]).read_text())
        print(json.dumps(drain3_worker(spec["files"], spec["limits"])))
        return 0
    args = parse_args(argv)
    temp = None
    if args.generate:
        root = args.workdir or Path(temp := tempfile.mkdtemp(prefix="crashcart-bench-"))
        if _generate(args, root) != 0:
            return 2
    else:
        root = args.path
    try:
        results = bench(root, args)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    print(format_table(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if results["crashcart"]["exit_code"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Which cluster engine `crashcart batch --engine` ships: Dask or Ray, against the local process pool.

For each engine (issue 16's three figures, then throughput):

1. install size: a fresh venv, `pip install` of the engine's pinned wheels, the growth of its site-packages;
2. start-up: a local cluster of --workers processes until it has run one trivial task;
3. throughput: --jobs generated jobs (benchmarks/bench_batch.py's mix, small by default: the per-job overhead is
   what differs) triaged through crashcart.batch.runner.run_batch into a fresh result store, as jobs/min from
   the median of --runs wall times; the cluster is started before the clock (start-up is figure 2). The local
   pool is the same run without an engine (its workers start inside the clock, as in every batch). Each round
   runs every engine once, in a process of its own, so the load of a shared machine drifts over all alike;
   each engine must give the same classes and nodes.
4. payload: what one real BatchResult costs to send back: pickled as the model, or as model_dump's dict that the
   driver validates.

Ray has no engine in crashcart: the `ray` step here runs crashcart's worker task (engines._on_worker) as a Ray
remote function, which is all an engine does. It needs an interpreter with ray and crashcart (--ray-python).

    python benchmarks/bench_engines.py --out engines.json [--jobs 200 --max-mb 5 --workers 2 --runs 3]
    python benchmarks/bench_engines.py --ray-python /tmp/ray-venv/bin/python --skip-install
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_batch  # noqa: E402  (its job mix, beside this file)

PINS = {
    "dask": ["dask==2026.8.0", "distributed==2026.8.0"],
    "ray": ["ray==2.60.0"],
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_engines", description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--max-mb", type=float, default=5.0, help="the biggest job's size")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--ray-python", help="an interpreter with ray and crashcart installed (default: skip ray)")
    p.add_argument("--skip-install", action="store_true", help="leave out the install sizes (a venv each)")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    p.add_argument("--child", choices=["local", "dask", "ray"], help=argparse.SUPPRESS)  # one engine's runs
    p.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# -- 1. install size ------------------------------------------------------------------------------------------


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def install_size(engine: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-{engine}-venv-") as tmp:
        venv = Path(tmp)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        [site] = venv.glob("lib/python*/site-packages")
        before = _tree_bytes(site)
        began = time.perf_counter()
        pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *PINS[engine]]
        subprocess.run(pip, check=True, stderr=subprocess.DEVNULL)
        return {
            "packages": PINS[engine],
            "installed_mb": round((_tree_bytes(site) - before) / 1e6, 1),
            "pip_install_s": round(time.perf_counter() - began, 1),
        }


# -- 2 and 3, in a child per engine (Ray may live in another venv) ---------------------------------------------


class _Cluster:
    """A local cluster of `workers` processes and an engine on it; a no-op for the local pool."""

    def __init__(self, kind: str, workers: int) -> None:
        self.kind, self.workers, self.engine = kind, workers, None

    def start(self) -> None:
        if self.kind == "dask":
            from crashcart.batch.engines import DaskEngine

            self.engine = DaskEngine(workers=self.workers)
            self.engine._connect().submit(_ping, 1).result()
        elif self.kind == "ray":
            import ray

            ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False)
            self.engine = _RayEngine()
            ray.get(ray.remote(_ping).remote(1))

    def stop(self) -> None:
        if self.kind == "dask":
            self.engine.__exit__()
        elif self.kind == "ray":
            import ray

            ray.shutdown()


def _ping(x: int) -> int:
    return x


def _no_triage(job: Any, key: str) -> Any:
    """What a task costs without its triage: the job shipped, an ok result of it sent back."""
    from crashcart.batch.models import BatchResult

    return BatchResult(job=job, status="ok", logs_key=key)


def overhead(cluster: _Cluster, todo: list[Any], workers: int) -> float:
    """Seconds per job to run `todo` through the engine with _no_triage in place of the triage."""
    from crashcart.batch.runner import triage_jobs

    began = time.perf_counter()
    if cluster.engine is None:
        list(triage_jobs(todo, workers=workers, fn=_no_triage))
    else:
        real, cluster.engine._fn = cluster.engine._fn, _no_triage  # the engine's own test hook
        try:
            list(cluster.engine.triage(todo, (None, None, None), None))
        finally:
            cluster.engine._fn = real
    return (time.perf_counter() - began) / len(todo)


class _RayEngine:
    """crashcart's worker task as a Ray remote function, results as they complete (engines.Engine's shape)."""

    def __init__(self) -> None:
        from crashcart.batch.runner import triage_one

        self._fn = triage_one

    def triage(self, todo, init, progress):
        import ray

        from crashcart.batch.engines import _on_worker

        task = ray.remote(num_cpus=1)(_on_worker)
        pending = [task.remote(self._fn, job, key, init) for job, key in todo]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            yield ray.get(ready[0])


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One round of one engine: start its cluster (timed), triage every job once (timed), stop it."""
    from crashcart.batch.results import ResultStore
    from crashcart.batch.runner import run_batch
    from crashcart.batch.tree import discover_jobs

    jobs = discover_jobs(args.root)
    cluster = _Cluster(args.child, args.workers)
    began = time.perf_counter()
    cluster.start()
    startup = time.perf_counter() - began
    try:
        cold = overhead(cluster, [(j, "k") for j in jobs], args.workers)  # the workers' first tasks: imports
        warm = overhead(cluster, [(j, "k") for j in jobs], args.workers)
        with tempfile.TemporaryDirectory() as tmp, ResultStore(Path(tmp) / "b.db") as store:
            began = time.perf_counter()
            results = run_batch(jobs, results=store, workers=args.workers, engine=cluster.engine)
            wall = time.perf_counter() - began
    finally:
        cluster.stop()
    return {
        "startup_s": startup,
        "wall_s": wall,
        "triage_s_summed": sum(r.seconds for r in results),
        "overhead_ms_per_job": [cold * 1000, warm * 1000],
        "load_1min": os.getloadavg()[0],
        "answers": {
            r.job.job_id: [
                r.status,
                r.diagnosis and r.diagnosis.failure_class.value,
                r.diagnosis and r.diagnosis.faulty_nodes,
            ]
            for r in results
        },
    }


def run_child(python: str, kind: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [python, __file__, "--child", kind, "--root", str(root), "--workers", str(args.workers)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "XDG_DATA_HOME": str(root / ".x")})
    if done.returncode != 0:
        raise SystemExit(f"{kind}: {done.stderr[-1500:]}")
    return json.loads(done.stdout)


def rounds(engines: dict[str, str], root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """--runs rounds, each engine once a round: on a shared machine the load drifts, and so hits them alike."""
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in engines}
    for _ in range(args.runs):
        for kind, python in engines.items():
            runs[kind].append(run_child(python, kind, root, args))
    out: dict[str, Any] = {}
    for kind, got in runs.items():
        wall = statistics.median(r["wall_s"] for r in got)
        out[kind] = {
            "startup_s": None if kind == "local" else round(statistics.median(r["startup_s"] for r in got), 2),
            "wall_s": [round(r["wall_s"], 2) for r in got],
            "jobs_per_min": round(args.jobs / wall * 60, 1),
            # The jobs' own triage seconds, summed: the part of the wall time that is not the engine's.
            "triage_s_summed": [round(r["triage_s_summed"], 1) for r in got],
            # Each job through the engine with no triage in it: the engine's own cost, on its first jobs (its
            # workers import crashcart) and again; the local pool starts its processes anew for each batch.
            "overhead_ms_per_job_cold": round(statistics.median(r["overhead_ms_per_job"][0] for r in got), 2),
            "overhead_ms_per_job_warm": round(statistics.median(r["overhead_ms_per_job"][1] for r in got), 2),
            "load_1min": [round(r["load_1min"], 1) for r in got],
            "answers_agree": all(r["answers"] == got[0]["answers"] for r in got),
            "answers": got[0]["answers"],
        }
    return out


# -- 4. payload ---------------------------------------------------------------------------------------------


def payload(root: Path) -> dict[str, Any]:
    """One real result (the tree's first ok job), sent back 10000 times each way: pickle vs dump + validate."""
    from crashcart.batch.models import BatchResult
    from crashcart.batch.runner import logs_key, stat_logs, triage_one
    from crashcart.batch.tree import discover_jobs

    job = next(j for j in discover_jobs(root) if j.log_paths)
    result = triage_one(job, logs_key(stat_logs(job.log_paths)))
    n = 10000

    def timed(send: Any, receive: Any) -> tuple[float, int]:
        began = time.perf_counter()
        for _ in range(n):
            blob = pickle.dumps(send(), protocol=5)
            receive(pickle.loads(blob))
        return (time.perf_counter() - began) / n * 1e6, len(blob)

    model_us, model_bytes = timed(lambda: result, lambda r: r)
    dict_us, dict_bytes = timed(result.model_dump, BatchResult.model_validate)
    return {
        "model_pickle_us": round(model_us, 1),
        "model_bytes": model_bytes,
        "dict_dump_pickle_validate_us": round(dict_us, 1),
        "dict_bytes": dict_bytes,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    out: dict[str, Any] = {"cpus": os.cpu_count(), "workers": args.workers, "jobs": args.jobs, "runs": args.runs}
    if not args.skip_install:
        out["install"] = {e: install_size(e) for e in PINS}
    root = Path(tempfile.mkdtemp(prefix="crashcart-engines-bench-"))
    try:
        manifests = bench_batch.generate_tree(root, bench_batch.plan_jobs(args.jobs, args.max_mb, args.seed))
        shutil.rmtree(root / "broken")  # the broken jobs are bench_batch's; here only the overhead matters
        out["log_gb"] = round(sum(m["uncompressed_bytes"] for m in manifests.values()) / 1e9, 3)
        out["payload"] = payload(root)
        engines = {"local": sys.executable, "dask": sys.executable}
        if args.ray_python:
            engines["ray"] = args.ray_python
        out["engines"] = rounds(engines, root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    answers = [e.pop("answers", None) for e in out["engines"].values()]
    out["same_answers"] = all(a == answers[0] for a in answers)
    text = json.dumps(out, indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

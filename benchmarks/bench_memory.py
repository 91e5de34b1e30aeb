"""Incident memory at scale: add and search latency of a SqliteIncidentStore of N synthetic incidents.

Incidents are drawn from a pool of failure families (masked templates as the fingerprinter keeps them, with
per-incident variation: which templates, their order, op names, error words, noise lines). Reported:
add throughput (add_many in batches), single add latency (200 adds into the full store), top-5 search latency
over the full store (median and p95 of 200 queries, the index already built; issue 11's budget is 50 ms), split
into embedding the query and the rest (index search and reading the 5 incidents back), first search on a fresh
open (index file on disk) and after a full rebuild (index removed), and the size on disk.

--compare-embedders instead measures which hashing set-up retrieves best on the labelled dev set:
leave-one-out nearest-neighbour class accuracy and top-3 class recall over the cases' fingerprints.

    python benchmarks/bench_memory.py --n 100000 --out memory.json
    python benchmarks/bench_memory.py --compare-embedders --evalset ../shared/evalsets/dev
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from crashcart.knowledge.embeddings import get_embedder
from crashcart.knowledge.incident_store import SqliteIncidentStore
from crashcart.knowledge.incidents import Fingerprint, Incident, Provenance
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass

REPO = Path(__file__).resolve().parents[1]
SEARCH_BUDGET_MS = 50.0  # top-5 over 100k incidents (issue 11)
EMBEDDERS = ["hashing:256:1-1", "hashing:256", "hashing:1024:1-1", "hashing:1024", "hashing:4096:1-1", "hashing:4096"]
OPS = ["ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER", "BROADCAST", "SEND", "RECV", "ALLTOALL"]
WORDS = [
    "encoder",
    "decoder",
    "attention",
    "mlp",
    "embedding",
    "optimizer",
    "dataloader",
    "checkpoint",
    "moe",
    "router",
    "expert",
    "layernorm",
    "rotary",
    "scheduler",
    "sampler",
    "tokenizer",
]
NOISE = [
    "[Rank <NUM>] iteration <NUM>/<NUM> | loss <NUM> | lr <NUM> | grad norm <NUM>",
    "torch.distributed.elastic.multiprocessing.api: Sending process <NUM> closing signal SIGTERM",
    "srun: error: <HOST>: task <NUM>: Exited with exit code <NUM>",
    "Traceback (most recent call last):",
    'File "<PATH>", line <NUM>, in {word}_forward',
    "WARNING: {word} is deprecated and will be removed in a future release",
]
# family: (class, rule ids, salient templates); {op} and {word} vary per incident.
FAMILIES: list[tuple[FailureClass, list[str], list[str]]] = [
    (
        FailureClass.GPU_HARDWARE,
        ["gpu.xid_79", "gpu.fell_off_bus"],
        [
            "NVRM: Xid (PCI:<HEX>): <NUM>, pid=<NUM>, name=python, GPU has fallen off the bus.",
            "CUDA error: unspecified launch failure",
            "RuntimeError: CUDA error: an illegal memory access {word}",
        ],
    ),
    (
        FailureClass.GPU_HARDWARE,
        ["gpu.ecc_uncorrectable"],
        [
            "CUDA error: uncorrectable ECC error encountered",
            "NVRM: Xid (PCI:<HEX>): <NUM>, Row Remapper: row remap",
            "Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error",
        ],
    ),
    (
        FailureClass.NETWORK,
        ["net.ib.retry_exceeded", "net.ib.flush_error"],
        [
            "NCCL WARN NET/IB : Got completion from peer <IP> with status=<NUM> opcode=<NUM> "
            "len=<NUM> vendor err <NUM>",
            "NCCL INFO transport/net.cc:<NUM> -> <NUM>",
            "NCCL INFO proxy.cc:<NUM> -> <NUM> [Progress Thread]",
        ],
    ),
    (
        FailureClass.NETWORK,
        ["net.socket.connection_refused"],
        [
            "NCCL WARN socketStartConnect: Connect to <IP> failed : Connection refused",
            "NCCL WARN Call to connect returned Connection refused, retrying",
            "ncclSystemError: System call failed",
        ],
    ),
    (
        FailureClass.COLLECTIVE_TIMEOUT,
        ["coll.watchdog_timeout"],
        [
            "[Rank <NUM>] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=<NUM>, OpType={op}, "
            "NumelIn=<NUM>, NumelOut=<NUM>, Timeout(ms)=<NUM>) ran for <NUM> milliseconds before timing out.",
            "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels",
            "To avoid data inconsistency, we are taking the entire process down.",
        ],
    ),
    (
        FailureClass.CUDA_ERROR,
        ["cuda.illegal_address"],
        [
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "CUDA kernel errors might be asynchronously reported at some other API call",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        ],
    ),
    (
        FailureClass.NODE_FAILURE,
        ["node.slurm_node_fail"],
        [
            "slurmstepd: error: *** STEP <NUM> ON <HOST> CANCELLED AT <NUM> DUE TO NODE FAILURE ***",
            "srun: error: Node failure on <HOST>",
            "srun: Job step aborted: Waiting up to <NUM> seconds",
        ],
    ),
    (
        FailureClass.GPU_OOM,
        ["memory.cuda_oom"],
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <NUM> (GPU <NUM>; <NUM> total capacity)",
            "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            "in {word}_forward: output = torch.matmul(hidden_states, weight)",
        ],
    ),
    (
        FailureClass.HOST_OOM,
        ["memory.oom_killer"],
        [
            "slurmstepd: error: Detected <NUM> oom_kill event in StepId=<NUM>. Some of the step tasks have been OOM",
            "Out of memory: Killed process <NUM> (python) total-vm:<NUM>, anon-rss:<NUM>",
            "torch.distributed.elastic.multiprocessing.api: failed (exitcode: -<NUM>) local_rank: <NUM>",
        ],
    ),
    (
        FailureClass.STORAGE,
        ["storage.enospc"],
        [
            "OSError: [Errno <NUM>] No space left on device: <PATH>",
            "torch.save failed while writing {word} shard <NUM> to <PATH>",
            "RuntimeError: PytorchStreamWriter failed",
        ],
    ),
    (
        FailureClass.STORAGE,
        ["storage.stale_handle"],
        [
            "OSError: [Errno <NUM>] Stale file handle: <PATH>",
            "lustre: <HOST>: ll_ost_io: timeout on bulk READ",
            "DataLoader worker (pid <NUM>) is killed by signal: Bus error.",
        ],
    ),
    (
        FailureClass.LOSS_DIVERGENCE,
        ["loss.nan"],
        [
            "[Rank <NUM>] iteration <NUM> | loss nan | grad norm nan",
            "Detected NaN in {word} gradients, skipping step",
            "AssertionError: found NaN in local grad norm in backward pass",
        ],
    ),
    (
        FailureClass.CODE_BUG,
        ["code.attribute_error"],
        [
            "AttributeError: '{word}' object has no attribute 'config'",
            "Traceback (most recent call last):",
            'File "<PATH>", line <NUM>, in {word}_init',
        ],
    ),
    (
        FailureClass.CONFIG_ERROR,
        ["config.argparse_error"],
        [
            "error: unrecognized arguments: --{word}-size <NUM>",
            "usage: pretrain_gpt.py [-h] [--num-layers NUM_LAYERS]",
            "ValueError: tensor_model_parallel_size (<NUM>) must divide num_attention_heads",
        ],
    ),
    (
        FailureClass.ENVIRONMENT,
        ["env.import_error"],
        [
            "ModuleNotFoundError: No module named '{word}'",
            "ImportError: libcudart.so.<NUM>: cannot open shared object",
            "RuntimeError: The NVIDIA driver on your system is too old (found version <NUM>)",
        ],
    ),
    (
        FailureClass.DATA_ERROR,
        ["data.corrupt_sample"],
        [
            "ValueError: could not decode {word} sample <NUM> from shard <PATH>",
            "UnicodeDecodeError: 'utf-8' codec",
            "json.decoder.JSONDecodeError: Expecting value: line <NUM> column <NUM>",
        ],
    ),
    (
        FailureClass.CANCELLED,
        ["launcher.scancel"],
        [
            "slurmstepd: error: *** JOB <NUM> ON <HOST> CANCELLED AT <NUM> ***",
            "srun: forcing job termination",
            "srun: got SIGCONT",
        ],
    ),
]


def synthetic(rng: random.Random, minute: int) -> Incident:
    """One incident of a random family: some of its templates shuffled, variants filled, noise mixed in."""
    cls, rules, templates = rng.choice(FAMILIES)
    fill = {"op": rng.choice(OPS), "word": rng.choice(WORDS)}
    chosen = rng.sample(templates, rng.randint(2, len(templates)))
    chosen += [rng.choice(NOISE) for _ in range(rng.randint(0, 4))]
    chosen += [f"{rng.choice(WORDS)} {rng.choice(WORDS)} error {rng.choice(WORDS)}" for _ in range(rng.randint(0, 2))]
    rng.shuffle(chosen)
    fp = Fingerprint(
        templates=[t.format(**fill) for t in chosen],
        rule_ids=rng.sample(rules, rng.randint(1, len(rules))),
        classes=[cls],
    )
    return Incident(
        fingerprint=fp,
        failure_class=cls,
        action=DEFAULT_ACTION[cls],
        provenance=Provenance(job=f"job-{minute}", source="evalset"),
    )


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    return {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3)}


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def disk_mb(db: Path) -> dict[str, float]:
    def mb(*suffixes: str) -> float:
        paths = [db.with_name(db.name + s) for s in suffixes]
        return round(sum(p.stat().st_size for p in paths if p.exists()) / 1e6, 1)

    return {
        "db_mb": mb("", "-wal"),
        "index_mb": mb(".faiss", ".faiss.json"),
        "total_mb": mb("", "-wal", ".faiss", ".faiss.json"),
    }


def bench_store(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    db = workdir / "incidents.db"
    store = SqliteIncidentStore(db, get_embedder(args.embedder))
    build = 0.0
    for start in range(0, args.n, args.batch):
        batch = [synthetic(rng, start + i) for i in range(min(args.batch, args.n - start))]
        build += timed(lambda b=batch: store.add_many(b))
    first = timed(lambda: store.search(synthetic(rng, 0).fingerprint))
    adds = [timed(lambda i=i: store.add(synthetic(rng, args.n + i))) for i in range(args.samples)]
    catch_up = timed(lambda: store.search(synthetic(rng, 0).fingerprint))
    queries = [synthetic(rng, 0).fingerprint for _ in range(args.samples)]
    store.search(queries[0], k=5)  # the index is built and current before any query is timed
    searches = [timed(lambda q=q: store.search(q, k=5)) for q in queries]
    embeds = [timed(lambda q=q: store.embedder.embed([q.text()])) for q in queries]
    store.close()
    cold = SqliteIncidentStore(db)
    cold_first = timed(lambda: cold.search(queries[0]))
    cold.close()
    for suffix in (".faiss", ".faiss.json"):
        db.with_name(db.name + suffix).unlink()
    rebuilt = SqliteIncidentStore(db)
    rebuild_first = timed(lambda: rebuilt.search(queries[0]))
    count = rebuilt.count()
    rebuilt.close()
    return {
        "n": args.n,
        "count": count,
        "embedder": args.embedder,
        "batch": args.batch,
        "samples": args.samples,
        "add_many_per_s": round(args.n / build),
        "add": percentiles(adds),
        "first_search_after_load_ms": round(first * 1000, 1),
        "search_after_adds_ms": round(catch_up * 1000, 1),
        "search": percentiles(searches),
        "search_embed": percentiles(embeds),
        "search_budget_ms": SEARCH_BUDGET_MS,
        "search_within_budget": percentiles(searches)["p95_ms"] < SEARCH_BUDGET_MS,
        "first_search_index_on_disk_ms": round(cold_first * 1000, 1),
        "first_search_after_rebuild_ms": round(rebuild_first * 1000, 1),
        "disk": disk_mb(db),
    }


def evalset_fingerprints(evalset: Path) -> tuple[list[str], dict[str, list[Fingerprint]]]:
    """Each case's class, and two fingerprint views: triage's report.fingerprint and the masked case lines."""
    from crashcart.api import triage
    from crashcart.parsers.masking import mask

    labels = [json.loads(line) for line in (evalset / "labels.jsonl").read_text().splitlines() if line.strip()]
    classes = [lab["failure_class"] for lab in labels]
    views: dict[str, list[Fingerprint]] = {"report": [], "masked_lines": []}
    for lab in labels:
        path = evalset / lab["path"]
        report = triage([path])
        lines = [mask(ln.strip()) for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        views["report"].append(getattr(report, "fingerprint", None) or Fingerprint(templates=lines))
        views["masked_lines"].append(Fingerprint(templates=list(dict.fromkeys(lines))))
    return classes, views


def loo_scores(vectors: np.ndarray, classes: list[str]) -> dict[str, float]:
    """Leave-one-out: is the nearest other case of the same class (top-1), or any of the 3 nearest (top-3)?"""
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")
    top1 = [classes[order[i, 0]] == c for i, c in enumerate(classes)]
    top3 = [c in {classes[j] for j in order[i, :3]} for i, c in enumerate(classes)]
    return {"top1_accuracy": round(float(np.mean(top1)), 3), "top3_recall": round(float(np.mean(top3)), 3)}


def compare_embedders(evalset: Path) -> dict[str, Any]:
    classes, views = evalset_fingerprints(evalset)
    reachable = sum(classes.count(c) > 1 for c in classes)
    results = {
        view: {spec: loo_scores(get_embedder(spec).embed([f.text() for f in fps]), classes) for spec in EMBEDDERS}
        for view, fps in views.items()
    }
    return {"cases": len(classes), "cases_with_a_same_class_neighbour": reachable, "results": results}


def print_store(r: dict[str, Any]) -> None:
    rows = [
        ("incidents", f"{r['count']:,} ({r['embedder']}, single adds included)"),
        ("add_many throughput", f"{r['add_many_per_s']:,} incidents/s (batches of {r['batch']})"),
        ("single add", f"p50 {r['add']['p50_ms']} ms, p95 {r['add']['p95_ms']} ms"),
        ("first search after the load", f"{r['first_search_after_load_ms']} ms (index built + saved)"),
        ("search after the single adds", f"{r['search_after_adds_ms']} ms (index appended)"),
        (
            f"top-5 search over {r['count']:,}",
            f"median {r['search']['p50_ms']} ms, p95 {r['search']['p95_ms']} ms over {r['samples']} queries "
            f"(budget {r['search_budget_ms']:g} ms: {'met' if r['search_within_budget'] else 'MISSED'})",
        ),
        (
            "  of which embedding the query",
            f"median {r['search_embed']['p50_ms']} ms, p95 {r['search_embed']['p95_ms']} ms",
        ),
        ("first search, index on disk", f"{r['first_search_index_on_disk_ms']} ms"),
        ("first search, index removed", f"{r['first_search_after_rebuild_ms']} ms (full rebuild + save)"),
        ("size on disk", f"{r['disk']['total_mb']} MB (db {r['disk']['db_mb']}, index {r['disk']['index_mb']})"),
    ]
    for name, value in rows:
        print(f"{name:<30} {value}")


def print_comparison(r: dict[str, Any]) -> None:
    print(f"{r['cases']} cases, {r['cases_with_a_same_class_neighbour']} with another case of their class")
    print(f"{'view':<14} {'embedder':<18} {'top-1 acc':>9} {'top-3 recall':>12}")
    for view, by_spec in r["results"].items():
        for spec, s in by_spec.items():
            print(f"{view:<14} {spec:<18} {s['top1_accuracy']:>9.3f} {s['top3_recall']:>12.3f}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench_memory", description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="incidents in the store")
    p.add_argument("--batch", type=int, default=1000, help="incidents per add_many")
    p.add_argument("--samples", type=int, default=200, help="single adds and searches timed")
    p.add_argument("--embedder", default="hashing", help="embedder spec (see knowledge.embeddings.get_embedder)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir", type=Path, help="build the store here and keep it (default: a temp dir)")
    p.add_argument("--compare-embedders", action="store_true", help="compare hashing set-ups on the dev set")
    p.add_argument("--evalset", type=Path, default=REPO.parent / "shared" / "evalsets" / "dev")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    args = p.parse_args(argv)
    if args.compare_embedders:
        result = compare_embedders(args.evalset)
        print_comparison(result)
    else:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_memory."))
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            result = bench_store(args, workdir)
        finally:
            if args.workdir is None:
                shutil.rmtree(workdir, ignore_errors=True)
        print_store(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

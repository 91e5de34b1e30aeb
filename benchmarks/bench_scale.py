"""Scale traps: a job of many small files, one file of many distinct lines, one file of long lines.

- files: N per-rank logs of a few KB each, their lines taken from the healthy corpus (knowledge/healthy/,
  real programs' formats; see its sources.yaml), with one CUDA error in one file. Triaged with --workers 1
  and with --workers W: a parallel scan must not be slower than a serial one.
- unique: one node's log of N distinct lines, what a job that crashes again and again prints: Python
  tracebacks whose frames are real source lines (the installed packages' and the standard library's own .py
  files, as Python prints a frame), each ending in the exception its last frame's `raise` makes, between kernel
  lines from the healthy corpus and Lustre client errors. The source lines and messages differ from the first
  word on, so Drain3 holds thousands of clusters, hundreds in one leaf of its tree. --shape syslog writes the
  same as a node's syslog (the trainer's stderr through the journal): every line then starts alike.
- long: N lines of PyTorch's load_state_dict error, which names every missing key on one line (70 KB here),
  each for another model's keys: a template each, and memory that grows with the lines kept for each.

Each triage runs in its own child (`crashcart triage PATH --format json --no-memory`); its wall time and
peak RSS come from os.wait4. The inputs live in a temp folder, removed after (--keep DIR keeps them there,
to time the same command with another tool).

    python benchmarks/bench_scale.py files --count 20000
    python benchmarks/bench_scale.py unique --lines 40000 --keep /tmp/unique-job
    python benchmarks/bench_scale.py long --lines 3000
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import os
import pkgutil
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HEALTHY = REPO / "knowledge" / "healthy"
MB = 1e6
# Printed by PyTorch when a kernel faults (the line the cuda_error rules know); the one root cause of the job.
CUDA_ERROR = "[rank{rank}]: RuntimeError: CUDA error: an illegal memory access was encountered"
# Lustre client errors as the kernel logs them (the shapes of knowledge/rules' storage examples).
LUSTRE = [
    "LustreError: 11-0: {fs}-OST{ost:04x}-osc-ffff8f1e2a5c{tag:04x}: operation {op} to node 10.0.{a}.{b}@o2ib "
    "failed: rc = -{rc}",
    "Lustre: {fs}-OST{ost:04x}-osc-ffff8f1e2a5c{tag:04x}: Connection to {fs}-OST{ost:04x} (at 10.0.{a}.{b}@o2ib) "
    "was lost; in progress operations using this service will wait for recovery to complete",
    "Lustre: {fs}-OST{ost:04x}-osc-ffff8f1e2a5c{tag:04x}: Connection restored to 10.0.{a}.{b}@o2ib "
    "(at 10.0.{a}.{b}@o2ib)",
]
LUSTRE_OPS = ["ost_connect", "ost_write", "ost_read", "ost_punch", "obd_ping", "ldlm_enqueue", "mds_connect"]
_NAME = re.compile(r"[A-Za-z_]\w{2,}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_scale", description=__doc__.split("\n")[0])
    p.add_argument("case", choices=["files", "unique", "long"])
    p.add_argument("--count", type=int, default=20000, help="files: how many per-rank files")
    p.add_argument("--lines", type=int, default=40000, help="unique, long: how many distinct lines")
    p.add_argument("--shape", default="stderr", choices=["stderr", "syslog"], help="unique: the job's log or syslog")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="files: the parallel run's workers")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, help="generate here and keep it (default: a temp folder, removed after)")
    p.add_argument("--generate-only", action="store_true", help="write the inputs (into --keep) and stop")
    p.add_argument("--crashcart", default=None, help="the crashcart command (default: the one beside this Python)")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    args = p.parse_args(argv)
    if args.generate_only and args.keep is None:
        p.error("--generate-only needs --keep DIR")
    return args


# ----------------------------------------------------------------------------------------------------
# Inputs.


def healthy_lines(*names: str) -> list[str]:
    """The lines of some healthy-corpus samples, blank ones left out."""
    return [line for name in names for line in (HEALTHY / name).read_text().splitlines() if line.strip()]


def write_many_files(root: Path, count: int, seed: int) -> dict[str, Any]:
    """`count` per-rank logs under node*/ (8 ranks a node), a slice of torchrun + Megatron + NCCL lines each."""
    rng = random.Random(seed)
    pool = healthy_lines("torchrun.log", "megatron.log", "nccl.log")
    total = 0
    for i in range(count):
        node, rank = divmod(i, 8)
        start = rng.randrange(len(pool))
        lines = [f"[rank{i}]: {line}" for line in (pool[start:] + pool[:start])[:30]]
        if i == count // 2:
            lines.append(CUDA_ERROR.format(rank=i))
        path = root / f"node{node:04d}" / f"rank{rank}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode()
        path.write_bytes(data)
        total += len(data)
    return {"files": count, "log_bytes": total}


Frame = tuple[str, int, str, str, str | None]  # file, line number, function, source line, exception it raises


def source_frames(rng: random.Random) -> Iterator[Frame]:
    """The statements inside the functions of the installed packages and the standard library, eight files at
    a time taken in turn (so one traceback's frames come from different files)."""
    paths = sysconfig.get_paths()
    found = {*Path(paths["purelib"]).rglob("*.py"), *Path(paths["stdlib"]).rglob("*.py")}
    files = sorted(f for f in found if not {"test", "tests"} & set(f.parts))  # test data holds odd bytes
    rng.shuffle(files)
    open_files: list[Iterator[Frame]] = []
    while files or open_files:
        while files and len(open_files) < 8:
            open_files.append(_file_frames(files.pop(), rng))
        current = open_files.pop(0)
        frame = next(current, None)
        if frame is not None:
            yield frame
            open_files.append(current)


def _file_frames(path: Path, rng: random.Random) -> Iterator[Frame]:
    """The file's statements in functions (docstrings left out), first line of each, as a traceback shows them;
    a `raise ValueError(...)` with a message also gives the exception line Python prints for it."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return
    lines = text.splitlines()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for stmt in ast.walk(func):
            if isinstance(stmt, ast.stmt) and not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.Expr):
                exc = _raised(stmt, rng) if isinstance(stmt, ast.Raise) else None
                yield str(path), stmt.lineno, func.name, lines[stmt.lineno - 1].strip(), exc


def _raised(stmt: ast.Raise, rng: random.Random) -> str | None:
    """`ValueError: the message` for a raise of a built-in exception with a one-line literal message."""
    call = stmt.exc
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.args):
        return None
    kind = getattr(builtins, call.func.id, None)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        message = arg.value
    elif isinstance(arg, ast.JoinedStr):
        message = "".join(_rendered(part, rng) for part in arg.values)
    else:
        return None
    return f"{call.func.id}: {message}" if message and "\n" not in message else None


def _rendered(part: ast.expr, rng: random.Random) -> str:
    """A value for one part of an f-string: its text, or a number or a name for what it interpolates."""
    if isinstance(part, ast.Constant):
        return str(part.value)
    if not isinstance(part, ast.FormattedValue):
        return ""
    if rng.random() < 0.5:
        return str(rng.randrange(1, 4097))
    name = _NAME.findall(ast.unparse(part.value))
    value = name[-1] if name else "None"
    return repr(value) if part.conversion == ord("r") else value


def tracebacks(frames: Iterator[Frame], rng: random.Random) -> Iterator[list[str]]:
    """Tracebacks as CPython prints them: up to three calling frames, then the frame that raised."""
    calls: list[Frame] = []
    for frame in frames:
        if frame[4] is None:
            calls = [*calls[-2:], frame]
            continue
        chain = [*calls[: rng.randint(0, len(calls))], frame]
        out = ["Traceback (most recent call last):"]
        for path, no, func, code, _ in chain:
            out += [f'  File "{path}", line {no}, in {func}', f"    {code}"]
        yield [*out, str(frame[4])]
        calls = []


def lustre_line(rng: random.Random) -> str:
    return rng.choice(LUSTRE).format(
        fs=rng.choice(["scratch", "lustre", "work"]),
        ost=rng.randrange(64),
        tag=rng.randrange(1 << 16),
        op=rng.choice(LUSTRE_OPS),
        a=rng.randrange(4),
        b=rng.randrange(1, 255),
        rc=rng.choice([16, 19, 107, 110]),
    )


def write_unique_file(root: Path, want: int, seed: int, syslog: bool) -> dict[str, Any]:
    """One node's log of `want` distinct lines: a trainer's tracebacks between kernel and Lustre lines.

    As the job's own log (stderr with the kernel lines an epilog appends), message texts differ from the first
    token on; as the node's syslog (the trainer's stderr in the journal), every line starts alike.
    """
    rng = random.Random(seed)
    kernel = [line.removeprefix("kernel: ") for line in healthy_lines("kernel.log") if line.startswith("kernel: ")]
    raised = tracebacks(source_frames(rng), rng)
    seen: set[str] = set()
    clock = written = total = 0
    with (root / "node0001.log").open("w", encoding="utf-8", errors="replace") as fh:
        while len(seen) < want:
            trace = next(raised, None)
            if trace is None:
                break  # every installed raise used: fewer distinct lines than asked for
            pid = rng.randrange(2000, 60000)
            lines = [f"python3[{pid}]: {line}" if syslog else line for line in trace]
            lines += [f"kernel: {rng.choice(kernel)}", f"kernel: {lustre_line(rng)}"]
            for line in lines:
                clock += rng.randrange(3)
                if syslog:
                    line = time.strftime("%b %e %H:%M:%S node0001 ", time.gmtime(1714557600 + clock)) + line
                fh.write(line + "\n")
                seen.add(line)
                written, total = written + 1, total + len(line) + 1
        fh.write(CUDA_ERROR.format(rank=0) + "\n")
    return {"files": 1, "lines": written + 1, "distinct_lines": len(seen), "log_bytes": total}


def write_long_lines(root: Path, count: int) -> dict[str, Any]:
    """`count` missing-keys lines (torch/nn/modules/module.py: 'Missing key(s) in state_dict: {}. '), the keys
    of a model named after an installed module, under one of eight parts, so each line is a template of its own."""
    parts = ["encoder", "decoder", "vision_tower", "text_model", "lm_head", "embed_tokens", "mm_projector", "adapter"]
    names = sorted({m.name for m in pkgutil.iter_modules()})
    total = 0
    with (root / "node0001.log").open("w", encoding="utf-8") as fh:
        for i in range(count):
            model = f"{names[i % len(names)]}.{parts[i // len(names) % len(parts)]}"
            keys = ", ".join(f'"{model}.layers.{n}.self_attn.q_proj.weight"' for n in range(1200))
            line = f"\tMissing key(s) in state_dict: {keys}. "
            fh.write(line + "\n")
            total += len(line) + 1
    return {"files": 1, "lines": count, "log_bytes": total}


# ----------------------------------------------------------------------------------------------------
# Runs.


def run_child(cmd: list[str]) -> dict[str, Any]:
    """Run cmd: its wall time, its own peak RSS (wait4), exit code and report."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        row: dict[str, Any] = {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss * 1024 / MB, "exit_code": code}
        try:
            report = json.loads(out.read())
            row["failure_class"] = report["diagnosis"]["failure_class"]
        except (ValueError, KeyError, TypeError):
            row["stderr_tail"] = err.read().decode(errors="replace")[-500:]
        return row


def crashcart_cmd(explicit: str | None) -> list[str]:
    if explicit:
        return explicit.split()
    beside = Path(sys.executable).parent / "crashcart"
    return [str(beside)] if beside.exists() else [shutil.which("crashcart") or "crashcart"]


def triage(args: argparse.Namespace, root: Path, workers: int) -> dict[str, Any]:
    cmd = [*crashcart_cmd(args.crashcart), "triage", str(root), "--format", "json", "--no-memory"]
    return run_child([*cmd, "--workers", str(workers)])


def bench(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    if args.case == "files":
        job = write_many_files(root, args.count, args.seed)
        if args.generate_only:
            return {"job": job}
        return {
            "job": job,
            "workers_1": triage(args, root, 1),
            f"workers_{args.workers}": triage(args, root, args.workers),
        }
    if args.case == "unique":
        job = write_unique_file(root, args.lines, args.seed, args.shape == "syslog")
    else:
        job = write_long_lines(root, args.lines)
    if args.generate_only:
        return {"job": job}
    return {"job": job, "workers_1": triage(args, root, 1)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="crashcart-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        results = bench(args, root)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    results["job"].update(case=args.case, path=str(root))
    print(json.dumps(results, indent=2))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r.get("exit_code", 0) == 0 for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

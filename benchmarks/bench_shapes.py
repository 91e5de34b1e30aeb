"""End-to-end triage throughput over log SHAPES, each next to vanilla Drain3 on the same files in the same run.

One job folder per shape, written into a work dir, then measured the way benchmarks/bench_triage.py measures
(its helpers are imported, not copied): every contender in its own child process, wall time and peak RSS
from os.wait4, Drain3 with the default TemplateMiner and add_log_message on every line, fed at most
--drain3-limit-mb and extrapolated (it is slow).

Shapes (sizes before --scale):
- generated: `crashcart generate --nodes 16 --total-mb 200 --scenario xid79`;
- per_rank_1024: `crashcart generate --nodes 128 --gpus-per-node 8 --total-mb 60 --layout per_rank`;
- varied_numbers: real lines that hold a number, from the Loghub samples, tiled over 8 files (200 MB);
- loghub_tiled: each Loghub sample tiled into its own file (200 MB in all);
- one_big_file: one 10 GB file tiling the generated shape's files (only with --with-big: it needs the disk).

Tiled lines are real lines with only their numbers changed (see Varier), so no two copies are the same bytes:
a decimal run gets a decimal of random length 1-9 (but a lone 0 stays 0, and so does a float's exponent: a
healthy job's counts of skipped and NaN iterations read 0, and a loss of 2.1E+48213 is infinite, so either
varied is a failing job's line), a 0x run random hex digits of random length in the same case, a bare hex ID
(UUID, hash) random digits of the same length, a timestamp's fraction random digits. The
knowledge/healthy/*.log files are left out unless --with-healthy-samples: each is a few hundred lines copied
from many jobs' logs in public threads (their sources.yaml lists them), and two are this project's generator
output, so none is one job's log.

    python benchmarks/bench_shapes.py --out shapes.json  # each shape's crashcart figures: the median of --runs 3
    python benchmarks/bench_shapes.py --shapes loghub_tiled,varied_numbers --scale 0.05
    python benchmarks/bench_shapes.py --with-big --big-gb 2 --workdir /data/shapes
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

if str(Path(__file__).resolve().parent) not in sys.path:  # the sibling module, when imported from elsewhere
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_triage as bt  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LOGHUB = REPO.parent / "shared" / "data" / "loghub-2k"
HEALTHY = REPO / "knowledge" / "healthy"
MB = bt.MB
_BUILD_FLAG = "--build-shape"

SHAPES = ("generated", "per_rank_1024", "varied_numbers", "loghub_tiled", "one_big_file")
DEFAULT_SHAPES = SHAPES[:4]
SIZES_MB = {"generated": 200.0, "per_rank_1024": 60.0, "varied_numbers": 200.0, "loghub_tiled": 200.0}
VARIED_FILES = 8


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_shapes", description=(__doc__ or "").split("\n")[0])
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every shape's size (0.05 for a quick run)")
    p.add_argument("--with-big", action="store_true", help="add one_big_file (--big-gb of disk in --workdir)")
    p.add_argument("--big-gb", type=float, default=10.0, help="one_big_file's size before --scale")
    p.add_argument("--runs", type=int, default=3, help="crashcart runs per shape: the median run's figures count")
    p.add_argument("--drain3-limit-mb", type=float, default=30.0, help="feed Drain3 this many MB, extrapolate")
    p.add_argument("--no-drain3", action="store_true", help="skip the Drain3 baseline")
    p.add_argument("--with-healthy-samples", action="store_true", help="also tile knowledge/healthy's samples")
    p.add_argument("--loghub", type=Path, default=LOGHUB, help="the Loghub 2k samples (<System>/<System>_2k.log)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir", type=Path, help="build the shapes here and keep them (default: a temp dir)")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    args = p.parse_args(argv)
    args.shape_list = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if args.with_big and "one_big_file" not in args.shape_list:
        args.shape_list.append("one_big_file")
    unknown = sorted(set(args.shape_list) - set(SHAPES))
    if unknown:
        p.error(f"unknown shape(s): {', '.join(unknown)}")
    if "one_big_file" in args.shape_list and not args.with_big:
        p.error("one_big_file needs --with-big (it writes --big-gb GB)")
    if args.scale <= 0:
        p.error("--scale must be positive")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


# ----------------------------------------------------------------------------------------------------
# Numbers varied in place: real lines, new numbers, nothing else touched.

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DATE_FULL = r"\d{4}[-/.]\d{2}[-/.]\d{2}"  # 2015-10-18, 2005.06.03
_DATE_SHORT = rf"(?:\d{{2}}/\d{{2}}/\d{{2}}|\d{{8}}|\d{{2}}[-.]\d{{2}}|{_MONTH} +\d{{1,2}}|[IWEF]\d{{4}})"
_TIME = r"\d{2}:\d{2}:\d{2}"
_HEX = "[0-9a-fA-F]"
# A timestamp is kept but for its fraction: varying its date and time digits would make it no timestamp.
_TIMESTAMP = (
    rf"(?<!\w)(?:{_DATE_FULL}[-T _]+(?:{_TIME}|\d{{2}}\.\d{{2}}\.\d{{2}})|(?:{_DATE_SHORT}[-T _]+)?{_TIME}"
    rf"|{_DATE_FULL}(?![\d.:]))(?:[.,:](?P<frac>\d{{1,9}}))?(?: (?:19|20)\d{{2}}(?!\d))?"
)
_NUMBER = re.compile(
    r"(?=[0-9a-fA-F\[JMSONDIW])(?:"  # where a number can start: skips most positions (the regex is slow)
    rf"(?P<ts>{_TIMESTAMP})"
    rf"|(?P<dmesg>\[ *\d+\.)(?P<dfrac>\d{{6}})(?=\])"  # the kernel's [263130.578379]
    r"|(?P<hdfs>^\d{6} \d{6}(?= ))"  # HDFS: 081109 203615
    rf"|(?P<uuid>(?<!\w){_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}(?!\w))"
    rf"|(?P<hex0x>(?<!\w)0[xX]{_HEX}+(?!\w))"
    rf"|(?P<hexid>(?<![\w-])(?={_HEX}*[a-fA-F])(?={_HEX}*\d){_HEX}{{8,64}}(?![\w-]))"
    r"|(?P<dec>(?<![\w\\])(?<![eE][-+])\d+(?!\w))"  # not in a word (mlx5_core, node07), an escape (\042), an exponent
    r")"
)
# Pools of random values, one per kind of slot. Fixed-length slots take a long entry cut by the format
# ("{3:.6}"), so one pool serves every length.
DEC, HEX, HEX_UP, DIGITS, HEXFIX, HEXFIX_UP = range(6)
_POOL = 100_003  # a prime: a block of tiled lines lines up with a pool again only after _POOL copies
_PAD = 512  # slots of one kind one line may take from a pool in one slice


class Template(NamedTuple):
    """A line with its numbers cut out: str.format text, and how many values it takes from each pool."""

    fmt: str
    takes: tuple[tuple[int, int], ...]


def _is_upper(text: str) -> bool:
    return any(c in "ABCDEF" for c in text)


def _slots(m: re.Match[str]) -> list[tuple[str, int, str]]:
    """A match as pieces: (literal, -1, "") or (the replaced text, pool, format spec)."""
    kind, text = m.lastgroup, m.group(0)
    if kind == "dec":
        return [(text, -1, "")] if text == "0" else [(text, DEC, "")]  # a zero count stays zero: see the docstring
    if kind in ("ts", "dfrac"):
        group = "frac" if kind == "ts" else "dfrac"
        if m.group(group) is None:
            return [(text, -1, "")]
        a, b = (i - m.start() for i in m.span(group))
        return [(text[:a], -1, ""), (text[a:b], DIGITS, f".{b - a}"), (text[b:], -1, "")]
    if kind == "hex0x":
        return [(text[:2], -1, ""), (text[2:], HEX_UP if _is_upper(text[2:]) else HEX, "")]
    if kind in ("uuid", "hexid"):
        pool = HEXFIX_UP if _is_upper(text) else HEXFIX
        out: list[tuple[str, int, str]] = []
        for i, part in enumerate(text.split("-")):
            out += [("-", -1, "")] * (i > 0) + [(part, pool, f".{len(part)}")]
        return out
    return [(text, -1, "")]  # hdfs: a date and a time, kept


def compile_line(line: str) -> Template:
    """line as a Template: the regex runs once per source line, rendering a copy needs no regex."""
    pieces: list[tuple[str, int, str]] = []
    pos = 0
    for m in _NUMBER.finditer(line):
        pieces.append((line[pos : m.start()], -1, ""))
        pieces += _slots(m)
        pos = m.end()
    pieces.append((line[pos:], -1, ""))
    counts = [0] * 6
    for _, pool, _ in pieces:
        if pool >= 0:
            counts[pool] += 1
    base = [sum(counts[:i]) for i in range(6)]  # the values are passed pool by pool
    seen = [0] * 6
    fmt = []
    for text, pool, spec in pieces:
        if pool < 0:
            fmt.append(text.replace("{", "{{").replace("}", "}}"))
        else:
            fmt.append(f"{{{base[pool] + seen[pool]}:{spec}}}" if spec else f"{{{base[pool] + seen[pool]}}}")
            seen[pool] += 1
    return Template("".join(fmt), tuple((p, n) for p, n in enumerate(counts) if n))


class Varier:
    """Renders templates with fresh random values from seeded pools, so no two tiled copies are the same."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        size = _POOL + _PAD
        lengths = rng.choices(range(1, 10), k=size)
        hexes = [f"{rng.getrandbits(4 * n):0{n}x}" for n in rng.choices(range(1, 17), k=size)]
        longs = [f"{rng.getrandbits(256):064x}" for _ in range(size)]
        self._pools: list[list[str]] = [
            [str(rng.randrange(10 ** (n - 1) if n > 1 else 0, 10**n)) for n in lengths],  # DEC: 1-9 digits
            hexes,  # HEX: 1-16 digits
            [h.upper() for h in hexes],
            [f"{rng.randrange(10**9):09d}" for _ in range(size)],  # DIGITS: a fraction, cut to its length
            longs,  # HEXFIX: an ID, cut to its length
            [h.upper() for h in longs],
        ]
        self._pos = [rng.randrange(_POOL) for _ in range(6)]
        self._interned: dict[Template, Template] = {}

    def template(self, line: str) -> Template:
        """compile_line, one shared object per distinct template (a big source holds few distinct ones)."""
        t = compile_line(line)
        return self._interned.setdefault(t, t)

    def render(self, t: Template) -> str:
        args: list[str] = []
        for pool, n in t.takes:
            i = self._pos[pool]
            if n <= _PAD:
                args += self._pools[pool][i : i + n]
            else:
                args += [self._pools[pool][(i + k) % _POOL] for k in range(n)]
            self._pos[pool] = (i + n) % _POOL
        return t.fmt.format(*args)

    def line(self, text: str) -> str:
        """text with every number replaced."""
        return self.render(compile_line(text))


def read_lines(path: Path) -> list[str]:
    """The file's lines as they are (bytes kept by surrogateescape; CRLF's \\r dropped, Loghub's are CRLF)."""
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    return [line.rstrip("\r") for line in text.split("\n") if line.rstrip("\r")]


def write_tiled(out: Path, lines: Iterable[Template], target_bytes: int, varier: Varier) -> tuple[int, int]:
    """Render lines (cycled by the caller) until target_bytes, cut at a line end: (bytes, lines) written."""
    written = count = 0
    with open(out, "wb") as fh:
        for chunk in _batches(lines, 4096):
            data = ("\n".join(map(varier.render, chunk)) + "\n").encode("utf-8", errors="surrogateescape")
            if written + len(data) > target_bytes:  # the last batch
                data = data[: data.rfind(b"\n", 0, max(1, target_bytes - written)) + 1]
                fh.write(data)
                return written + len(data), count + data.count(b"\n")
            fh.write(data)
            written, count = written + len(data), count + len(chunk)
    return written, count


def _batches(items: Iterable[Template], n: int) -> Iterator[list[Template]]:
    batch: list[Template] = []
    for item in items:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def cycle_from(lines: list[Template], start: int) -> Iterator[Template]:
    """lines forever, from index start."""
    if not lines:
        return
    i = start % len(lines)
    while True:
        yield lines[i]
        i = i + 1 if i + 1 < len(lines) else 0


# ----------------------------------------------------------------------------------------------------
# Sources: only real lines.


def loghub_files(root: Path) -> list[Path]:
    """<System>/<System>_2k.log of each Loghub sample (the raw logs, not the CSVs)."""
    files = sorted(p for p in root.glob("*/*_2k.log") if p.name == f"{p.parent.name}_2k.log")
    if not files:
        raise SystemExit(f"bench_shapes: no Loghub samples (<System>/<System>_2k.log) under {root}")
    return files


def healthy_files() -> list[Path]:
    """knowledge/healthy's samples from public threads, without the two that are this project's generator output."""
    return sorted(p for p in HEALTHY.glob("*.log") if not p.name.startswith("generated_"))


def varied_sources(args: argparse.Namespace) -> list[Path]:
    return loghub_files(args.loghub) + (healthy_files() if args.with_healthy_samples else [])


# ----------------------------------------------------------------------------------------------------
# Shape builders. Each writes DIR/logs/ and returns what it built; they run in a child (see _build).


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def build_generated(out: Path, total_mb: float, extra: list[str]) -> dict[str, Any]:
    """The project's own generator (its manifest gives the expected diagnosis)."""
    cmd = [sys.executable, "-m", "crashcart.cli", "generate", str(out), "--total-mb", f"{total_mb:.3f}", *extra]
    subprocess.run([*cmd, "--workers", "1"], env=_env(), stdout=sys.stderr, check=True)
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "command": cmd,
        "expected_class": manifest.get("failure_class"),
        "expected_node": manifest.get("faulty_node"),
    }


def build_varied_numbers(out: Path, total_bytes: int, sources: list[Path], seed: int) -> dict[str, Any]:
    """The number-bearing real lines of every source, interleaved, tiled over VARIED_FILES files."""
    varier = Varier(seed)
    per_source = [[t for t in map(varier.template, read_lines(p)) if t.takes] for p in sources]
    pool = [t for group in _interleave(per_source) for t in group]
    logs = out / "logs"
    logs.mkdir(parents=True)
    for k in range(VARIED_FILES):
        write_tiled(
            logs / f"varied-{k:02d}.log",
            cycle_from(pool, k * len(pool) // VARIED_FILES),
            total_bytes // VARIED_FILES,
            varier,
        )
    return {"sources": [str(p) for p in sources], "source_lines": len(pool)}


def _interleave(groups: list[list[Template]], run: int = 50) -> Iterator[list[Template]]:
    """Runs of `run` lines from each group in turn, so every file holds every format."""
    for start in range(0, max((len(g) for g in groups), default=0), run):
        for g in groups:
            if start < len(g):
                yield g[start : start + run]


def build_loghub_tiled(out: Path, total_bytes: int, sources: list[Path], seed: int) -> dict[str, Any]:
    """Each source tiled into its own file, the same share of the bytes each."""
    logs = out / "logs"
    logs.mkdir(parents=True)
    varier = Varier(seed)
    for src in sources:
        lines = [varier.template(line) for line in read_lines(src)]
        write_tiled(logs / src.name, cycle_from(lines, 0), total_bytes // len(sources), varier)
    return {"sources": [str(p) for p in sources]}


def build_one_big_file(out: Path, total_bytes: int, generated: Path, seed: int) -> dict[str, Any]:
    """The generated shape's files, one after another and again, in one file."""
    _, files = bt.job_files(generated)
    need = total_bytes + 256 * 2**20
    free = shutil.disk_usage(out.parent).free
    if free < need:
        raise SystemExit(
            f"bench_shapes: one_big_file needs {need / MB:.0f} MB free in {out.parent}, has {free / MB:.0f}"
        )
    logs = out / "logs"
    logs.mkdir(parents=True)
    varier = Varier(seed)
    lines = [varier.template(line) for path in files for line in _stream(path)]  # few distinct templates
    write_tiled(logs / "big.log", cycle_from(lines, 0), total_bytes, varier)
    return {"sources": [str(generated)], "source_lines": len(lines), "templates": len(set(lines))}


def _stream(path: Path) -> Iterator[str]:
    """The file's non-empty lines, read as it goes (a generated file can be big)."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as fh:
        for line in fh:
            if line := line.rstrip("\n").rstrip("\r"):
                yield line


def build_shape(name: str, out: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """Build one shape into out (which must not exist); the builders' own notes, and the build time."""
    began = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    mb, seed = spec["mb"], spec["seed"]
    sources = [Path(p) for p in spec.get("sources", [])]
    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "generated": lambda: build_generated(out, mb, ["--nodes", "16", "--scenario", "xid79"]),
        "per_rank_1024": lambda: build_generated(
            out, mb, ["--nodes", "128", "--gpus-per-node", "8", "--layout", "per_rank"]
        ),
        "varied_numbers": lambda: build_varied_numbers(out, int(mb * MB), sources, seed),
        "loghub_tiled": lambda: build_loghub_tiled(out, int(mb * MB), sources, seed),
        "one_big_file": lambda: build_one_big_file(out, int(mb * MB), Path(spec["generated"]), seed),
    }
    info = builders[name]()
    info["build_s"] = time.perf_counter() - began
    return info


def _build(name: str, out: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """build_shape in a child, so this process stays small: a child's peak RSS starts at ours."""
    cmd = [sys.executable, str(Path(__file__).resolve()), _BUILD_FLAG, name, str(out), json.dumps(spec)]
    proc = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench_shapes: building {name} failed (exit {proc.returncode})")
    return json.loads(proc.stdout)


# ----------------------------------------------------------------------------------------------------
# Measuring and reporting.


def shape_specs(args: argparse.Namespace, workdir: Path) -> dict[str, dict[str, Any]]:
    """What to build for each asked shape (one_big_file also needs the generated shape)."""
    specs: dict[str, dict[str, Any]] = {}
    asked = set(args.shape_list) | ({"generated"} if "one_big_file" in args.shape_list else set())
    for name in [s for s in SHAPES if s in asked]:  # in SHAPES' order: generated before one_big_file
        mb = (args.big_gb * 1000 if name == "one_big_file" else SIZES_MB[name]) * args.scale
        spec: dict[str, Any] = {"mb": mb, "seed": args.seed}
        if name in ("varied_numbers", "loghub_tiled"):
            spec["sources"] = [
                str(p) for p in (varied_sources(args) if name == "varied_numbers" else loghub_files(args.loghub))
            ]
        if name == "one_big_file":
            spec["generated"] = str(workdir / "generated")
        specs[name] = spec
    return specs


def measure(name: str, root: Path, build: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """crashcart triage, then Drain3, each in a fresh child, on root's log files."""
    logs, files = bt.job_files(root if (root / "manifest.json").is_file() else root / "logs")
    sizes = [f.stat().st_size for f in files]
    job: dict[str, Any] = {
        "shape": name,
        "path": str(logs),
        "files": len(files),
        "log_bytes": sum(sizes),
        "disk_bytes": sum(sizes),
        "rss_floor_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB,
        "build": build,
    }
    if build.get("expected_class") is not None:
        job.update(expected_class=build["expected_class"], expected_node=build.get("expected_node"))
    triage = [sys.executable, "-m", "crashcart.cli", "triage", str(logs), "--no-memory", "--format", "json"]
    runs = {"crashcart": median_run(triage, args.runs)}
    if not args.no_drain3:
        runs["drain3"] = bt.run_drain3(files, bt.byte_limits(sizes, args.drain3_limit_mb))
    result = bt.compose_results(job, runs)
    result["crashcart"]["command"] = triage
    result["crashcart"]["runs_wall_s"] = runs["crashcart"]["runs_wall_s"]
    return result


def median_run(cmd: list[str], runs: int) -> dict[str, Any]:
    """The run of median wall time of `runs` (its own RSS and output with it): one run on a shared machine is
    one sample of its load. Drain3 runs once: pure Python on a fixed budget, it varies far less than it is slow."""
    done = sorted((bt.run_child(cmd) for _ in range(runs)), key=lambda run: run["wall_s"])
    chosen = done[len(done) // 2]
    chosen["runs_wall_s"] = [round(run["wall_s"], 3) for run in done]
    return chosen


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """The per-shape line of the report: sizes, each contender's wall, MB/s and peak RSS, the ratio."""
    job, cc, d3 = result["job"], result["crashcart"], result.get("drain3")
    row: dict[str, Any] = {
        "shape": job["shape"],
        "files": job["files"],
        "bytes": job["log_bytes"],
        "crashcart_exit_code": cc["exit_code"],
        "crashcart_failure_class": cc.get("failure_class"),
        "crashcart_wall_s": cc["wall_s"],
        "crashcart_mb_per_s": cc["mb_per_s"],
        "crashcart_peak_rss_mb": cc["peak_rss_mb"],
    }
    if "class_ok" in cc:
        row["crashcart_class_ok"] = cc["class_ok"]
    if d3:
        row.update(
            drain3_wall_s=d3["wall_s"],
            drain3_mb_per_s=d3["mb_per_s"],
            drain3_peak_rss_mb=d3["peak_rss_mb"],
            drain3_extrapolated=bool(d3.get("extrapolated")),
            drain3_processed_mb=d3.get("processed_mb"),
        )
        ratios = result.get("ratios_crashcart_over_drain3") or {}
        row["ratio_mb_per_s_crashcart_over_drain3"] = ratios.get("mb_per_s")
    return row


_COLUMNS = (  # header, width, the row's field, its format
    ("shape", 15, "shape", "{}"),
    ("MB", 8, "bytes", "{:.1f}"),
    ("cc wall s", 9, "crashcart_wall_s", "{:.2f}"),
    ("cc MB/s", 8, "crashcart_mb_per_s", "{:.1f}"),
    ("cc RSS MB", 9, "crashcart_peak_rss_mb", "{:.0f}"),
    ("d3 MB/s", 8, "drain3_mb_per_s", "{:.2f}"),
    ("d3 RSS MB", 9, "drain3_peak_rss_mb", "{:.0f}"),
    ("cc/d3", 7, "ratio_mb_per_s_crashcart_over_drain3", "{:.1f}x"),
)


def format_table(rows: list[dict[str, Any]]) -> str:
    """One line per shape (cc = crashcart, d3 = Drain3), for stderr; the JSON has the rest."""
    lines = [" ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w, _, _) in enumerate(_COLUMNS)) + "  class"]
    for r in rows:
        cells = []
        for i, (_, width, key, fmt) in enumerate(_COLUMNS):
            value: Any = r.get(key)
            value = value / MB if key == "bytes" else value
            text = "-" if value is None else fmt.format(value)
            if key == "drain3_mb_per_s" and r.get("drain3_extrapolated"):
                text += "*"
            cells.append(f"{text:<{width}}" if i == 0 else f"{text:>{width}}")
        note = str(r["crashcart_failure_class"])
        if "crashcart_class_ok" in r:
            note += " (ok)" if r["crashcart_class_ok"] else " (WRONG)"
        if r["crashcart_exit_code"] != 0:
            note += f" EXIT {r['crashcart_exit_code']}"
        lines.append(" ".join(cells) + "  " + note)
    lines.append("cc = crashcart triage; d3 = vanilla Drain3; * extrapolated (its RSS is for the part it read)")
    return "\n".join(lines)


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    specs = shape_specs(args, workdir)
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {k: args.__dict__[k] for k in ("scale", "drain3_limit_mb", "seed", "with_healthy_samples")},
        "shapes": {},
        "summary": [],
    }
    need = sum(spec["mb"] for spec in specs.values()) * MB * 1.05 + 256 * 2**20  # the generator overshoots a bit
    free = shutil.disk_usage(workdir).free
    if free < need:  # before an hour of building, not after
        raise SystemExit(f"bench_shapes: the shapes need about {need / MB:.0f} MB in {workdir}, {free / MB:.0f} free")
    for name, spec in specs.items():
        print(f"bench_shapes: building {name} ({spec['mb']:.1f} MB)", file=sys.stderr)
        build = _build(name, workdir / name, spec)
        if name not in args.shape_list:  # built only as one_big_file's source
            continue
        print(f"bench_shapes: measuring {name}", file=sys.stderr)
        result = measure(name, workdir / name, build, args)
        results["shapes"][name] = result
        results["summary"].append(summary_row(result))
        if args.out:  # after each shape: a long run that stops half way keeps what it measured
            args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_BUILD_FLAG]:
        print(json.dumps(build_shape(argv[1], Path(argv[2]), json.loads(argv[3]))))
        return 0
    args = parse_args(argv)
    temp = None
    workdir = args.workdir or Path(temp := tempfile.mkdtemp(prefix="crashcart-shapes-"))
    clash = [s for s in shape_specs(args, workdir) if (workdir / s).exists()]
    if clash:
        raise SystemExit(f"bench_shapes: {workdir} already holds {', '.join(clash)}; give an empty --workdir")
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = run(args, workdir)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    print(format_table(results["summary"]), file=sys.stderr)
    text = json.dumps(results, indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0 if all(r["crashcart_exit_code"] == 0 for r in results["summary"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())

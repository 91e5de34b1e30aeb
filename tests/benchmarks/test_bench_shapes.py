"""benchmarks/bench_shapes.py: its shapes are real lines with only the numbers changed, and its report is whole.

No timing is asserted: the shapes are built tiny, and main runs once on one small shape.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_shapes.py"
_SPEC = importlib.util.spec_from_file_location("bench_shapes", _PATH)
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
sys.modules["bench_shapes"] = bench
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]

needs_loghub = pytest.mark.skipif(not bench.LOGHUB.is_dir(), reason=f"Loghub samples not found at {bench.LOGHUB}")

# Written apart from the benchmark's own regex on purpose: every 0x run and every whole token of hex digits
# (decimals included) becomes '#', whatever its length. What is left, words and punctuation, must be a
# source line's: a builder that invented or dropped a word, or changed anything but a number, fails this.
_NORM = re.compile(r"0[xX][0-9a-fA-F]+|\b[0-9a-fA-F]+\b")


def norm(line: str) -> str:
    return _NORM.sub("#", line)


def out_lines(folder: Path) -> dict[str, list[str]]:
    """Each written file's lines, decoded as the builder encoded them."""
    return {
        p.name: p.read_bytes().decode("utf-8", errors="surrogateescape").split("\n")[:-1]
        for p in sorted((folder / "logs").iterdir())
    }


def source_norms(paths: list[Path]) -> set[str]:
    return {norm(line) for p in paths for line in bench.read_lines(p)}


def test_varier_keeps_the_format_and_every_word() -> None:
    line = (
        "2015-10-18 18:01:47,978 pid=1234 addr=0xDEADBEEF id=0x1a "
        "req-38101a0b-2096-447d-96ea-a692162415ae on mlx5_core node07 \\042 [263130.578379] {x}"
    )
    got = bench.Varier(3).line(line)
    m = re.fullmatch(
        r"2015-10-18 18:01:47,(\d{3}) pid=(\d{1,9}) addr=0x([0-9A-F]{1,16}) id=0x([0-9a-f]{1,16}) "
        r"req-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) on mlx5_core node07 \\042"
        r" \[263130\.(\d{6})\] \{x\}",
        got,
    )
    assert m, got  # date and time kept, fraction same length, 0x and case kept, UUID shape kept, words kept
    assert got != line
    assert bench.Varier(3).line("no numbers here: {} INFO") == "no numbers here: {} INFO"


def test_a_zero_count_and_an_exponent_stay_as_they_are() -> None:
    """Megatron's interval line (NVIDIA/Megatron-LM#756): a varied 0 would be a run that skipped iterations, a varied
    exponent a loss that overflows (2.1E+48213) or vanishes."""
    line = (
        "[2024-03-30 20:02:40] iteration       10/  500000 | consumed samples:         1280 | elapsed time per "
        "iteration (ms): 9496.4 | throughput per GPU (TFLOP/s/GPU): 137.5 | learning rate: 2.000E-06 | global batch "
        "size:   128 | lm loss: 2.092005E-01 | loss scale: 1.0 | grad norm: 51.010 | num zeros: 0.0 | number of "
        "skipped iterations:   0 | number of nan iterations:   0 |"
    )
    got = bench.Varier(5).line(line)
    assert got.endswith(" | number of skipped iterations:   0 | number of nan iterations:   0 |")
    assert re.search(r"learning rate: \d+\.\d+E-06 \| .* lm loss: \d+\.\d+E-01 \|", got), got
    assert got != line


@needs_loghub
def test_varied_shapes_hold_only_real_lines(tmp_path: Path) -> None:
    sources = bench.loghub_files(bench.LOGHUB)
    real = source_norms(sources)
    for name in ("varied_numbers", "loghub_tiled"):
        info = bench.build_shape(name, tmp_path / name, {"mb": 0.4, "seed": 5, "sources": [str(p) for p in sources]})
        files = out_lines(tmp_path / name)
        assert len(files) == (bench.VARIED_FILES if name == "varied_numbers" else len(sources)), info
        written = [line for lines in files.values() for line in lines]
        assert written and sum(len(x) + 1 for x in written) <= 0.4e6
        invented = [line for line in written if norm(line) not in real]
        assert not invented, invented[:3]


@needs_loghub
def test_tiled_copies_differ_in_their_numbers(tmp_path: Path) -> None:
    src = bench.LOGHUB / "OpenStack" / "OpenStack_2k.log"
    lines = bench.read_lines(src)
    size = sum(len(x) + 1 for x in lines)
    bench.build_loghub_tiled(tmp_path / "t", int(size * 3.5), [src], seed=2)  # about 3 copies
    copies = out_lines(tmp_path / "t")[src.name]
    first, second, third = (copies[k * len(lines) : (k + 1) * len(lines)] for k in range(3))
    assert [norm(x) for x in first] == [norm(x) for x in second] == [norm(x) for x in lines]  # same lines, in order
    numbered = [i for i, x in enumerate(lines) if bench.compile_line(x).takes]
    assert len(numbered) > 0.9 * len(lines)
    for a, b in ((first, second), (second, third), (first, third)):
        same = sum(a[i] == b[i] for i in numbered)
        assert same < 0.02 * len(numbered)  # every copy's numbers are its own
    assert len(set(copies)) > 0.95 * len(copies)


def test_one_big_file_tiles_the_generated_job(tmp_path: Path) -> None:
    job = tmp_path / "generated"
    (job / "logs").mkdir(parents=True)
    (job / "manifest.json").write_text("{}")
    sample = bench.HEALTHY / "generated_per_node.log"  # this project's generator output, frozen
    (job / "logs" / "node00.log").write_bytes(sample.read_bytes())
    info = bench.build_shape("one_big_file", tmp_path / "big", {"mb": 0.3, "seed": 1, "generated": str(job)})
    (lines,) = out_lines(tmp_path / "big").values()
    assert info["source_lines"] < len(lines) and sum(len(x) + 1 for x in lines) <= 0.3e6
    real = source_norms([sample])
    assert all(norm(x) in real for x in lines)


def test_the_median_run_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    walls = iter([3.0, 1.0, 2.0])
    monkeypatch.setattr(bench.bt, "run_child", lambda cmd: {"wall_s": next(walls), "stdout": ""})
    run = bench.median_run(["crashcart"], 3)
    assert run["wall_s"] == 2.0 and run["runs_wall_s"] == [1.0, 2.0, 3.0]


def test_healthy_samples_leave_out_generator_output() -> None:
    names = [p.name for p in bench.healthy_files()]
    assert names and not [n for n in names if n.startswith("generated_")]


def test_parse_args_and_specs(tmp_path: Path) -> None:
    args = bench.parse_args([])
    assert args.shape_list == list(bench.DEFAULT_SHAPES) and args.drain3_limit_mb == 30.0
    assert args.runs == 3
    for bad in (["--shapes", "nope"], ["--shapes", "one_big_file"], ["--scale", "0"], ["--runs", "0"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
    args = bench.parse_args(["--shapes", "per_rank_1024", "--with-big", "--big-gb", "2", "--scale", "0.5"])
    specs = bench.shape_specs(args, tmp_path)
    assert list(specs) == ["generated", "per_rank_1024", "one_big_file"]  # the big file's source, built first
    assert specs["one_big_file"]["mb"] == pytest.approx(1000.0) and specs["per_rank_1024"]["mb"] == 30.0
    assert specs["one_big_file"]["generated"] == str(tmp_path / "generated")


@needs_loghub
def test_main_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "shapes.json"
    argv = ["--shapes", "loghub_tiled", "--scale", "0.001", "--drain3-limit-mb", "0.05"]
    assert bench.main([*argv, "--workdir", str(tmp_path / "w"), "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    (row,) = results["summary"]
    for field in (
        "bytes",
        "crashcart_wall_s",
        "crashcart_mb_per_s",
        "crashcart_peak_rss_mb",
        "drain3_wall_s",
        "drain3_mb_per_s",
        "drain3_peak_rss_mb",
        "ratio_mb_per_s_crashcart_over_drain3",
    ):
        assert isinstance(row[field], (int, float)) and row[field] > 0, field
    assert row["shape"] == "loghub_tiled" and row["crashcart_exit_code"] == 0
    assert "crashcart_failure_class" in row and row["drain3_extrapolated"] is True
    detail = results["shapes"]["loghub_tiled"]
    assert detail["job"]["log_bytes"] == row["bytes"] and detail["crashcart"]["command"][-1] == "json"
    assert len(detail["crashcart"]["runs_wall_s"]) == 3
    assert "loghub_tiled" in capsys.readouterr().err  # the table

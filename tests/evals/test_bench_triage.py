"""benchmarks/bench_triage.py: its pure helpers, without running a big job or crashcart itself."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_triage.py"
_SPEC = importlib.util.spec_from_file_location("bench_triage", _PATH)
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
sys.modules["bench_triage"] = bench
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]

JOB = {
    "path": "/j/logs",
    "files": 17,
    "log_bytes": 1_000_000_000,
    "disk_bytes": 1_000_000_000,
    "rss_floor_mb": 15.0,
    "expected_class": "gpu_hardware",
    "expected_node": "node07",
    "scenario": "xid79",
}


def _report(cls: str | None, nodes: list[str]) -> str:
    return json.dumps({"diagnosis": {"failure_class": cls, "faulty_nodes": nodes}, "stats": {"lines": 9}})


def test_parse_args() -> None:
    args = bench.parse_args(["--generate", "--total-mb", "64", "--nodes", "4", "--drain3-limit-mb", "8"])
    assert (args.generate, args.total_mb, args.nodes, args.drain3_limit_mb) == (True, 64.0, 4, 8.0)
    assert args.path is None and args.scenario == "xid79" and args.fault_node is None
    assert bench.parse_args(["/data/job"]).path == Path("/data/job")
    for bad in ([], ["/data/job", "--generate"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_byte_limits_spread_over_files() -> None:
    assert bench.byte_limits([300, 700], None) is None
    assert bench.byte_limits([300_000, 700_000], 5.0) is None  # the limit covers everything
    assert bench.byte_limits([3_000_000, 7_000_000], 1.0) == [300_000, 700_000]


def test_compose_results_rates_verdict_and_ratios() -> None:
    runs = {
        "crashcart": {
            "wall_s": 10.0,
            "peak_rss_mb": 200.0,
            "exit_code": 0,
            "stdout": _report("gpu_hardware", ["node07"]),
            "stderr": "",
        },
        "drain3": {
            "wall_s": 21.0,
            "peak_rss_mb": 100.0,
            "exit_code": 0,
            "stdout": "",
            "stderr": "",
            "bytes": 100_000_000,
            "lines": 5,
            "clusters": 3,
            "process_s": 20.0,
        },
        "wc": {"wall_s": 0.5, "peak_rss_mb": 2.0, "exit_code": 0, "stdout": "", "stderr": ""},
    }
    res = bench.compose_results(JOB, runs)
    cc, d3 = res["crashcart"], res["drain3"]
    assert cc["mb_per_s"] == pytest.approx(100.0)
    assert (cc["class_ok"], cc["node_ok"], cc["nodes_exact"], cc["stats"]) == (True, True, True, {"lines": 9})
    assert d3["extrapolated"] and d3["processed_mb"] == pytest.approx(100.0)
    assert d3["wall_s"] == pytest.approx(21.0 + 20.0 * 9)  # the 10% measured, the rest at the same rate
    assert d3["measured_wall_s"] == 21.0
    ratios = res["ratios_crashcart_over_drain3"]
    assert ratios["wall_s"] == pytest.approx(10.0 / 201.0)
    assert ratios["peak_rss_mb"] == pytest.approx(2.0)
    assert res["wc"]["mb_per_s"] == pytest.approx(2000.0)
    json.dumps(res)  # it is written as JSON as is


@pytest.mark.parametrize(
    "want,got,nodes,ok",
    [
        (("gpu_hardware", "node07"), "gpu_hardware", ["node03"], (True, False)),
        (("gpu_hardware", "node07"), "collective_timeout", ["node07", "node03"], (False, True)),
        ((None, None), "unknown", [], (True, True)),
        (("loss_divergence", None), "loss_divergence", ["node01"], (True, False)),
    ],
)
def test_verdict(want: tuple, got: str, nodes: list[str], ok: tuple) -> None:
    job = {**JOB, "expected_class": want[0], "expected_node": want[1]}
    run = {"wall_s": 1.0, "peak_rss_mb": 1.0, "exit_code": 0, "stdout": _report(got, nodes), "stderr": ""}
    row = bench.compose_results(job, {"crashcart": run})["crashcart"]
    assert (row["class_ok"], row["node_ok"]) == ok
    assert row["nodes_exact"] == (nodes == ([want[1]] if want[1] else []))


def test_failed_triage_is_reported_not_crashed() -> None:
    run = {"wall_s": 1.0, "peak_rss_mb": 1.0, "exit_code": 2, "stdout": "", "stderr": "crashcart: error: boom\n"}
    res = bench.compose_results(JOB, {"crashcart": run})
    assert res["crashcart"]["class_ok"] is False and "boom" in res["crashcart"]["stderr_tail"]
    assert "EXIT 2" in bench.format_table(res)


def test_format_table() -> None:
    runs = {
        "crashcart": {
            "wall_s": 10.0,
            "peak_rss_mb": 200.0,
            "exit_code": 0,
            "stdout": _report("gpu_hardware", ["node07"]),
            "stderr": "",
        },
        "drain3": {
            "wall_s": 21.0,
            "peak_rss_mb": 100.0,
            "exit_code": 0,
            "stdout": "",
            "stderr": "",
            "bytes": 100_000_000,
            "lines": 5,
            "clusters": 3,
            "process_s": 20.0,
        },
    }
    table = bench.format_table(bench.compose_results(JOB, runs))
    assert "expected: gpu_hardware on node07" in table
    assert "gpu_hardware on node07 (class ok, node ok)" in table
    assert "extrapolated from 100.0 MB" in table
    assert "crashcart/drain3: wall 0.050x" in table


def test_job_files_sizes_and_drain3_worker(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "node00.log").write_text("step 1 loss 2.5\nstep 2 loss 2.4\n")
    (logs / "node01.log.gz").write_bytes(gzip.compress(b"step 1 loss 2.6\nstep 2 loss 2.3\nno newline"))
    (tmp_path / "manifest.json").write_text(
        json.dumps({"files": [{"name": "logs/node00.log", "uncompressed_bytes": 32}]})
    )
    folder, files = bench.job_files(tmp_path)
    assert folder == logs and [f.name for f in files] == ["node00.log", "node01.log.gz"]
    assert bench.log_sizes(tmp_path, files, bench.load_manifest(tmp_path)) == [32, 42]
    everything = bench.drain3_worker([str(f) for f in files], None)
    assert (everything["lines"], everything["bytes"], everything["clusters"]) == (5, 74, 2)
    first_lines = bench.drain3_worker([str(f) for f in files], [10, 10])
    assert first_lines["lines"] == 2


def test_run_child_measures_its_own_child() -> None:
    run = bench.run_child([sys.executable, "-c", "print('hi')"])
    assert run["exit_code"] == 0 and run["stdout"] == "hi\n"
    assert run["wall_s"] > 0 and run["peak_rss_mb"] > 1

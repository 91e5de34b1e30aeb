"""The console command: the JSON contract, the human formats, and one-line errors with exit code 2."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from fakes.rule_rows import store_with_a_broken_rule

OOM_LOG = (
    "[rank0]: iteration      100/  5000 | lm loss: 2.31 |\n"
    "[rank3]: iteration      100/  5000 | lm loss: 2.30 |\n"
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has a total"
    " capacity of 79.10 GiB of which 98.00 MiB is free.\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
)


@pytest.fixture()
def oom_log(tmp_path: Path) -> Path:
    path = tmp_path / "train.log"
    path.write_text(OOM_LOG)
    return path


def test_json_contract(cli, oom_log: Path) -> None:
    code, out, _ = cli("triage", str(oom_log), "--format", "json")
    assert code == 0
    report = json.loads(out)
    d = report["diagnosis"]
    assert d["failure_class"] == "gpu_oom"
    assert d["action"] == "fix_job"
    assert isinstance(d["faulty_nodes"], list)
    assert d["faulty_ranks"] == [3]
    first = d["evidence"][0]
    assert (first["file"], first["line"]) == ("train.log", 3)
    assert "CUDA out of memory" in first["text"]
    assert report["stats"]["lines"] == 4


def test_text_and_markdown_formats(cli, oom_log: Path) -> None:
    code, out, _ = cli("triage", str(oom_log))
    assert code == 0 and "gpu_oom" in out and "train.log:3" in out
    code, out, _ = cli("triage", str(oom_log), "--format", "md")
    assert code == 0
    assert out.startswith("**crashcart: `gpu_oom` → `fix_job`**")
    assert "`train.log:3`" in out and "**Next steps**" in out


def test_html_format_writes_one_page(cli, oom_log: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code, out, _ = cli("triage", str(oom_log), "--format", "html", "-o", str(page), "--no-memory")
    text = page.read_text()
    assert code == 0 and out == "" and text.startswith("<!DOCTYPE html>")
    assert ">gpu_oom</span>" in text and "train.log:3" in text and "<script" not in text
    code, out, _ = cli("eval", str(tmp_path), "--format", "html")  # eval has no page
    assert code == 2


def test_stdin(cli, monkeypatch) -> None:
    class FakeStdin:
        buffer = __import__("io").BytesIO(OOM_LOG.encode())

    monkeypatch.setattr(sys, "stdin", FakeStdin())
    code, out, _ = cli("triage", "-", "--format", "json")
    assert code == 0
    assert json.loads(out)["diagnosis"]["evidence"][0]["file"] == "<stdin>"


def _cut_in_first_block(tmp_path: Path) -> Path:
    """A zstd file cut inside its first block: not one line of it can be decoded."""
    path = tmp_path / "cut.log.zst"
    body = "".join(f"{i} {OOM_LOG}" for i in range(2000)).encode()
    path.write_bytes(zstandard.ZstdCompressor().compress(body)[:300])
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing.log", "no such file or folder"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "holds no text, .gz or .zst log files"),
        (lambda p: (p / "x.bin").write_bytes(bytes(range(256)) * 64) and p / "x.bin", "x.bin: binary: not text"),
        (_cut_in_first_block, "no log could be read: cut.log.zst: read 0 lines, then: truncated zstd stream"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path: Path, make, message: str) -> None:
    code, out, err = cli("triage", str(make(tmp_path)))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("crashcart: error: ") and message in err
    assert "Traceback" not in err


def test_an_error_naming_an_odd_file_is_still_one_escaped_line(cli, tmp_path: Path) -> None:
    code, out, err = cli("triage", str(tmp_path / "run\n\x1b]0;pwned\x07.log"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
    assert "run\\n\\x1b]0;pwned\\x07.log" in err and "no such file or folder" in err


def test_odd_but_valid_input_is_read(cli, tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "crlf.log").write_bytes(b"epoch 1 ok\r\nOSError: [Errno 28] No space left on device\r\n")
    (tmp_path / "latin1.log").write_bytes(b"caf\xe9 \xff\xfe step 3\n")
    (tmp_path / "huge.log").write_bytes(b"x" * (10 << 20) + b"\n")
    code, out, _ = cli("triage", str(tmp_path), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["diagnosis"]["failure_class"] == "storage"
    assert report["diagnosis"]["evidence"][0]["text"] == "OSError: [Errno 28] No space left on device"
    assert report["stats"]["files"] == 4


def test_debug_env_reraises(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "argv", ["crashcart", "triage", str(tmp_path / "nope")])
    monkeypatch.setenv("CRASHCART_DEBUG", "1")
    from crashcart import cli as cli_module
    from crashcart.knowledge.errors import InputError

    with pytest.raises(InputError):
        cli_module.main()


def test_console_script_runs_as_a_process(oom_log: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "crashcart.cli", "triage", str(oom_log), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["diagnosis"]["failure_class"] == "gpu_oom"


def test_eval_json_is_one_compact_object_of_figures(cli, dev_evalset: Path) -> None:
    code, out, _ = cli("eval", str(dev_evalset), "--format", "json")
    assert code == 0 and out.count("\n") == 1
    report = json.loads(out)
    assert report["cases"] == 40 and report["accuracy"] >= 0.85 and "per_class" in report
    assert "results" not in report
    code, out, _ = cli("eval", str(dev_evalset), "--format", "json", "--cases")
    assert len(json.loads(out)["results"]) == 40


def test_eval_gives_the_model_llm_timeout_per_case(cli, tmp_path: Path, openai_server, monkeypatch) -> None:
    from fakes.openai_server import Silence

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "quiet.log").write_text(OOM_LOG.split("[rank3]: torch")[0])  # progress only: unsure
    label = {"id": "quiet", "path": "cases/quiet.log", "failure_class": "cancelled", "action": "retry"}
    (tmp_path / "labels.jsonl").write_text(json.dumps(label | {"evidence": [], "faulty_nodes": []}) + "\n")
    openai_server.script([Silence()])
    args = ["eval", str(tmp_path), "--format", "json", "--llm", "openai:m", "--llm-base-url", openai_server.base_url]
    code, out, err = cli(*args, "--llm-timeout", "1")
    assert code == 0, err
    usage = json.loads(out)["llm_usage"]
    assert (usage["consulted"], usage["calls"], usage["fallbacks"]) == (1, 1, 1)
    assert 1.0 <= usage["seconds"] < 2.0  # the 1 s deadline, not the default 30 s


def test_eval_of_a_missing_set_is_one_line(cli, tmp_path: Path) -> None:
    code, out, err = cli("eval", str(tmp_path / "none"))
    assert code == 2 and out == "" and err.count("\n") == 1


def test_a_confirmed_rule_that_no_longer_compiles_is_skipped_with_one_warning(
    cli, oom_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9: such a rule made every triage exit 2. It is written straight into the SQLite file, as a store an
    older crashcart filled (or a hand edit) holds it: nothing checked its pattern on the way in."""
    store = store_with_a_broken_rule(tmp_path / "rules.db")
    monkeypatch.setenv("CRASHCART_RULES", str(store))

    code, out, err = cli("triage", str(oom_log), "--format", "json", "--no-memory")
    assert code == 0
    report = json.loads(out)
    assert report["diagnosis"]["failure_class"] == "gpu_oom"  # the shipped rules still ran
    (warning,) = report["warnings"]
    assert warning.startswith("skipped confirmed rule user.prop-0123456789: ") and "does not compile in RE2" in warning
    assert err == f"crashcart: warning: {warning}\n"


# --- partial and odd input: read what can be read, list what was not (issue 9) -----------------------------


def _node_logs(tmp_path: Path) -> Path:
    """Two good node logs and the third node's .gz, cut where the node died mid-write (after its OOM)."""
    job = tmp_path / "job"
    job.mkdir()
    healthy = "".join(f"[rank0]: iteration {i:8d}/  5000 | lm loss: 2.31 |\n" for i in range(100))
    (job / "node01.log").write_text(healthy)
    (job / "node02.log").write_text(healthy)
    died = (healthy + OOM_LOG + healthy * 20).encode()
    blob = gzip.compress(died)
    (job / "node03.log.gz").write_bytes(blob[: len(blob) - 40])
    return job


def test_a_truncated_gz_among_good_node_logs_is_read_and_listed(cli, tmp_path: Path) -> None:
    job = _node_logs(tmp_path)
    code, out, err = cli("triage", str(job), "--format", "json", "--no-memory")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["diagnosis"]["failure_class"] == "gpu_oom"
    assert report["diagnosis"]["evidence"][0]["file"] == "node03.log.gz"
    [skipped] = report["skipped"]
    assert skipped["path"] == "node03.log.gz"
    assert skipped["reason"].startswith("read ") and "corrupt or truncated gzip" in skipped["reason"]

    code, out, _ = cli("triage", str(job), "--no-memory")
    assert code == 0 and "skipped: 1 not read, or not to the end" in out and "node03.log.gz: read " in out
    code, out, _ = cli("triage", str(job), "--format", "md", "--no-memory")
    assert code == 0 and "**Skipped: 1 not read, or not to the end**" in out and "- `node03.log.gz`: read " in out


def test_an_unreadable_file_among_good_ones_is_listed_not_fatal(cli, tmp_path: Path, monkeypatch) -> None:
    job = _node_logs(tmp_path)
    (job / "node04.log").write_text(OOM_LOG)
    denied = job / "node04.log"
    real_open = Path.open

    def fake_open(self: Path, *args, **kwargs):  # root reads any file: the permission error is made here
        if self == denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake_open)
    code, out, _ = cli("triage", str(job), "--format", "json", "--no-memory")
    assert code == 0
    skipped = json.loads(out)["skipped"]
    assert {"path": "node04.log", "reason": "cannot read (Permission denied)"} in skipped


def test_gzip_on_stdin_is_decompressed(cli, monkeypatch) -> None:
    # `gzip -c train.log | crashcart triage -`: read as text, it gave binary evidence and `unknown`.
    class GzipStdin:
        buffer = __import__("io").BytesIO(gzip.compress(OOM_LOG.encode()))

    monkeypatch.setattr(sys, "stdin", GzipStdin())
    code, out, _ = cli("triage", "-", "--format", "json", "--no-memory")
    assert code == 0
    d = json.loads(out)["diagnosis"]
    assert d["failure_class"] == "gpu_oom" and "CUDA out of memory" in d["evidence"][0]["text"]


def test_a_file_name_that_is_not_utf8_gives_a_json_report(cli, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    Path(os.fsdecode(bytes(job) + b"/rank3-caf\xe9.log")).write_text(OOM_LOG)
    code, out, err = cli("triage", str(job), "--format", "json", "--no-memory")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["diagnosis"]["evidence"][0]["file"] == "rank3-caf\\xe9.log"


# -- help, version, -o, generate: the edges a new user hits first ---------------------------------------------

BOX = str.maketrans("", "", "│╭╮╰╯─┃")
TYPE_TAG = re.compile(r"<(?:bool|int|float|str|path|list\[[^>]*\]|[a-z_]+\|[^>]*)>")


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand of the real app, as argv prefixes: (), ("triage",), ("cases", "add") ..."""
    import typer

    from crashcart import cli

    paths: list[tuple[str, ...]] = []

    def walk(cmd, prefix: tuple[str, ...]) -> None:
        paths.append(prefix)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, (*prefix, name))

    walk(typer.main.get_command(cli.app), ())
    return paths


def _expected_words(path: tuple[str, ...]) -> list[str]:
    """The words each help screen must show whole: option names and every word of their help and the docstring."""
    import typer

    from crashcart import cli

    cmd = typer.main.get_command(cli.app)
    for name in path:
        cmd = cmd.commands[name]
    words = (cmd.help or "").split("\n\n")[0].split()
    for param in cmd.params:
        if param.param_type_name == "option":  # an argument shows as its metavar
            words += [*param.opts, *param.secondary_opts]
        words += (getattr(param, "help", None) or "").split()
    return words


@pytest.mark.parametrize("columns", ["80", "60"])
def test_every_help_reads_cleanly(cli, monkeypatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    paths = _command_paths()
    assert ("cases", "show") in paths and ("generate",) in paths and ("batch",) in paths
    for path in paths:
        code, out, _ = cli(*path, "--help")
        assert code == 0, path
        assert max(map(len, out.splitlines())) <= int(columns), path
        assert not TYPE_TAG.findall(out), (path, TYPE_TAG.findall(out))
        if columns == "80":  # at 60 a path default longer than the help column is cut with an ellipsis
            assert "…" not in out, (path, [line for line in out.splitlines() if "…" in line])
        tokens = out.translate(BOX).split()
        shown = set(tokens) | {part for token in tokens for part in token.split(",")}  # rich joins aliases: --a,--b
        fits = int(columns) // 4  # the help column's width at 60 columns; a longer word cannot but break
        broken = [w for w in _expected_words(path) if w not in shown and len(w) <= fits]
        assert not broken, (path, columns, broken)


def test_dash_h_is_help_everywhere(cli) -> None:
    for path in [(), ("triage",), ("cases",), ("cases", "show"), ("batch",)]:
        code, out, _ = cli(*path, "-h")
        assert code == 0 and "Usage: " in out and "Options" in out, path


def test_version(cli) -> None:
    from importlib.metadata import version

    code, out, _ = cli("--version")
    assert (code, out) == (0, f"crashcart {version('crashcart')}\n")


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_triage_out_writes_the_report_to_a_file(cli, oom_log: Path, tmp_path: Path, fmt: str) -> None:
    dest = tmp_path / f"report.{fmt}"
    code, out, _ = cli("triage", str(oom_log), "--format", fmt, "-o", str(dest))
    assert (code, out) == (0, "")
    written = dest.read_text()
    assert "gpu_oom" in written and "\x1b[" not in written  # plain text, no colour codes in a file
    if fmt == "json":
        assert json.loads(written)["diagnosis"]["failure_class"] == "gpu_oom"


def test_triage_out_unwritable_is_one_line(cli, oom_log: Path, tmp_path: Path) -> None:
    code, out, err = cli("triage", str(oom_log), "--out", str(tmp_path / "no" / "such" / "r.txt"))
    assert code == 2 and out == ""
    assert err.startswith("crashcart: error: cannot write ") and err.count("\n") == 1 and "--out" in err


def test_triage_of_an_empty_file_says_so(cli, tmp_path: Path) -> None:
    empty = tmp_path / "train.log"
    empty.write_text("")
    code, out, _ = cli("triage", str(empty))
    assert code == 0 and "empty" in out and "1 file," in out and "file(s)" not in out
    code, out, err = cli("triage", str(empty), "--format", "json")
    assert code == 0 and json.loads(out)["diagnosis"]["failure_class"] == "unknown"
    assert err.count("crashcart: note:") == 1 and "empty" in err


def test_generate_is_a_real_command(cli, tmp_path: Path) -> None:
    code, out, _ = cli("generate", "--help")
    assert code == 0 and "--fault-node" in out and "--total-mb" in out
    code, out, _ = cli(
        "generate", str(tmp_path / "job"), "--nodes", "2", "--total-mb", "0.2", "--fault-node", "1", "--layout", "slurm"
    )
    assert code == 0, out
    assert "expected: gpu_hardware on node01" in out
    assert f"crashcart triage {tmp_path / 'job' / 'logs'}" in out
    assert (tmp_path / "job" / "manifest.json").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "0"], "crashcart: error: --nodes: input should be greater than or equal to 1\n"),
        (["--nodes", "2", "--fault-node", "5"], "crashcart: error: fault_node 5 is not a node of a 2-node job"),
        (["--total-mb", "-1"], "crashcart: error: --total-mb: input should be greater than 0\n"),
    ],
)
def test_generate_bad_input_is_one_clear_line(cli, tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = cli("generate", str(tmp_path / "job"), *args)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1 and "validation error" not in err


def test_generate_scenario_names_are_the_generators() -> None:
    from crashcart.cli_generate import SCENARIO_NAMES
    from crashcart.evals.scenarios import SCENARIOS

    assert tuple(sorted(SCENARIOS)) == SCENARIO_NAMES


def test_a_json_triage_after_the_first_start_imports_neither_yaml_nor_rich(oom_log: Path) -> None:
    """Cold start: the knowledge files come from the cache as JSON, and only the terminal formats draw with rich."""
    probe = (
        "import sys\nfrom crashcart.cli import main\n"
        f"sys.argv = ['crashcart', 'triage', {str(oom_log)!r}, '--no-memory', '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'yaml', 'rich'}), file=sys.stderr)\n"
    )
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True) for _ in range(2)]
    assert json.loads(runs[1].stdout)["diagnosis"]["failure_class"] == "gpu_oom"
    assert runs[0].stderr.endswith("['yaml']\n")  # the first start parses the YAML and fills the cache
    assert runs[1].stderr.endswith("[]\n")

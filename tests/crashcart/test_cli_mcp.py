"""`crashcart mcp`: the log roots from --config and --log-root, one line for what stops it starting, and the mcp
SDK loaded only when the command runs."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import crashcart.mcp_server as mcp_server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_roots_of_the_config_and_of_the_options_are_served(cli, tmp_path: Path, monkeypatch) -> None:
    served: list = []
    monkeypatch.setattr(mcp_server, "serve", lambda config, http, port: served.append((config, http, port)))
    config = tmp_path / "bot.yaml"
    config.write_text(f"log_roots: [{EXAMPLES}]\nmax_triage_seconds: 60\n")
    other = tmp_path / "more"
    code, _, err = cli("mcp", "--config", str(config), "--log-root", str(other), "--http", "--port", "0")
    assert code == 0, err
    [(settings, http, port)] = served
    assert (settings.log_roots, settings.max_triage_seconds, http, port) == ([EXAMPLES, other], 60, True, 0)
    assert cli("mcp", "--log-root", str(other))[0] == 0
    assert served[1][0].log_roots == [other] and served[1][1:] == (False, 8765)  # stdio unless asked


def test_no_log_root_or_a_missing_one_is_one_line(cli, tmp_path: Path) -> None:
    code, out, err = cli("mcp")
    assert (code, out) == (2, "")
    assert err == "crashcart: error: no log root to read: pass --log-root DIR (repeatable) or log_roots in --config\n"
    code, _, err = cli("mcp", "--log-root", str(tmp_path / "gone"))
    assert code == 2 and err.count("\n") == 1 and f"log_roots that are not folders: {tmp_path / 'gone'}" in err


def test_a_port_in_use_is_one_line(cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = cli("mcp", "--http", "--port", str(port), "--log-root", str(EXAMPLES))
    assert code == 2
    assert err.startswith(f"crashcart: error: cannot listen on 127.0.0.1:{port} (") and err.count("\n") == 1
    assert err.endswith("pick another --port\n")


def test_the_cli_starts_without_the_mcp_sdk() -> None:
    probe = "import sys, crashcart.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'uvicorn')))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"

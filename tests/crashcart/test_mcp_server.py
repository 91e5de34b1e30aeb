"""`crashcart mcp` end to end (crashcart/mcp_server.py): the real command started as a subprocess and driven by the
mcp SDK's own client, over stdio and over streamable HTTP on a real local port. Logs are the bundled example job,
the secret corpus of the redaction tests, and a Slurm job found through sacct/scontrol stubs replaying recordings.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.secrets import LINES, leaks
from fakes.slurm import recorded
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
JOB = EXAMPLES / "xid79-job"
NODE07 = JOB / "logs" / "node07.log"
TOOLS = {"triage_logs", "triage_slurm_job", "show_lines", "similar_incidents", "pending_rules"}


def _server(*args: str) -> list[str]:
    return [sys.executable, "-m", "crashcart.cli", "mcp", *args]


def _drive(roots: list[Path], talk: Callable[[Client], Awaitable[Any]], *extra: str) -> Any:
    """Start `crashcart mcp --log-root ...` on stdio, run `talk` with a connected SDK client, stop the server."""
    argv = _server(*(a for root in roots for a in ("--log-root", str(root))), *extra)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ), cwd=str(REPO))

    async def session() -> Any:
        async with Client(params, read_timeout_seconds=120) as client:
            return await talk(client)

    return asyncio.run(session())


def _cli_json(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "crashcart.cli", "triage", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(done.stdout)


def _refusal(result: CallToolResult) -> str:
    """The one sentence of a tool error, without the SDK's `Error executing tool NAME: ` prefix."""
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text
    return re.sub(r"^Error executing tool \w+: ", "", text)


def test_stdio_lists_the_tools_triages_like_the_cli_and_refuses_paths_outside_the_roots(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(NODE07, outside / "node07.log")

    async def talk(client: Client) -> tuple[Any, ...]:
        tools = await client.list_tools()
        report = await client.call_tool("triage_logs", {"paths": ["xid79-job"]})
        absolute = await client.call_tool("triage_logs", {"paths": [str(outside / "node07.log")]})
        dotdot = await client.call_tool("triage_logs", {"paths": ["../README.md"]})
        return tools, report, absolute, dotdot

    tools, report, absolute, dotdot = _drive([EXAMPLES], talk)
    listed = {t.name: t for t in tools.tools}
    assert set(listed) == TOOLS  # confirming incidents or rules is a person's act, not a tool
    assert all(t.annotations is not None and t.annotations.read_only_hint for t in listed.values())

    assert not report.is_error
    got, cli = report.structured_content, _cli_json(JOB)
    assert got["diagnosis"]["failure_class"] == cli["diagnosis"]["failure_class"] == "gpu_hardware"
    assert got["diagnosis"] == cli["diagnosis"]  # the same record as `triage --format json`, evidence and all
    assert got["paths"] == [str(JOB)]
    assert json.loads(report.content[0].text) == got  # type: ignore[union-attr]

    assert _refusal(absolute) == f"{outside / 'node07.log'} is outside the log roots crashcart may read ({EXAMPLES})"
    assert "is outside the log roots crashcart may read" in _refusal(dotdot)


def test_show_lines_returns_the_window_around_a_line_under_the_roots(tmp_path: Path) -> None:
    lines = NODE07.read_text().splitlines()

    async def talk(client: Client) -> list[CallToolResult]:
        calls = [
            ("show_lines", {"file": "xid79-job/logs/node07.log", "line": 415, "before": 2, "after": 2}),
            ("show_lines", {"file": str(NODE07), "line": 3, "before": 60, "after": 60}),
            ("show_lines", {"file": "xid79-job/logs/node07.log", "line": len(lines) + 5}),
            ("show_lines", {"file": "xid79-job/logs", "line": 1}),
            ("show_lines", {"file": "/etc/passwd", "line": 1}),
        ]
        return [await client.call_tool(name, args) for name, args in calls]

    window, clipped, past_end, folder, outside = _drive([EXAMPLES], talk)
    assert window.structured_content == {
        "file": str(NODE07),
        "line": 415,
        "lines": [{"line": n, "text": lines[n - 1]} for n in range(413, 418)],
    }
    shown = [row["line"] for row in clipped.structured_content["lines"]]
    assert shown == list(range(1, 61))  # 60 lines at most, from the first
    assert _refusal(past_end) == f"xid79-job/logs/node07.log has no line {len(lines) + 5}"
    assert _refusal(folder) == "xid79-job/logs is a folder: give one log file in it"
    assert "/etc/passwd is outside the log roots" in _refusal(outside)


def test_every_result_is_redacted(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    log = root / "job.log"
    log.write_text("".join(f"ERROR {ln.text}\n" for ln in LINES))

    async def talk(client: Client) -> list[CallToolResult]:
        report = await client.call_tool("triage_logs", {"paths": ["job.log"]})
        window = await client.call_tool("show_lines", {"file": "job.log", "line": 1, "after": 60})
        return [report, window]

    report, window = _drive([root], talk)
    assert not report.is_error and not window.is_error
    assert "[REDACTED:" in json.dumps(window.structured_content)
    assert leaks([r.model_dump() for r in (report, window)]) == {}


def test_similar_incidents_and_pending_rules_come_from_the_stores(tmp_path: Path, monkeypatch) -> None:
    from crashcart.agent.cases import add_from_paths, propose_from_triage
    from crashcart.knowledge.taxonomy import FailureClass
    from crashcart.stores import open_memory, open_rule_store

    monkeypatch.setenv("CRASHCART_MEMORY", str(tmp_path / "incidents.db"))
    monkeypatch.setenv("CRASHCART_RULES", str(tmp_path / "rules.db"))
    with open_memory(create=True) as memory:
        incident, _ = add_from_paths(memory, [str(JOB)], failure_class=FailureClass.GPU_HARDWARE, resolution="RMA")
    with open_rule_store(create=True) as rules:
        proposal = propose_from_triage([str(NODE07)], FailureClass.GPU_HARDWARE, store=rules)
    assert proposal.status == "pending"

    async def talk(client: Client) -> list[CallToolResult]:
        similar = await client.call_tool("similar_incidents", {"paths": ["xid79-job/logs"], "k": 3})
        pending = await client.call_tool("pending_rules", {})
        return [similar, pending]

    similar, pending = _drive([EXAMPLES], talk)
    [found] = similar.structured_content["incidents"]
    assert (found["id"], found["failure_class"], found["resolution"]) == (incident.id, "gpu_hardware", "RMA")
    assert pending.structured_content["count"] == 1
    assert pending.structured_content["proposals"][0]["id"] == proposal.id
    assert pending.structured_content["proposals"][0]["pattern"] == proposal.pattern


def test_a_slurm_job_is_triaged_from_the_logs_sacct_names(tmp_path: Path, slurm_stubs) -> None:
    """The real crashcart.batch.slurm in the server, against sacct/scontrol stubs replaying Slurm 22.05."""
    root = tmp_path / "logs"
    cluster = root / "slurm0"
    log = cluster / "jobs" / "logs" / "train-oom-17039282.out"  # scontrol's StdOut for job 17039282
    log.parent.mkdir(parents=True)
    shutil.copy(NODE07, log)
    slurm_stubs.stub("sacct", recorded("sacct_failed_nodefail.txt", cluster))
    slurm_stubs.stub("scontrol", recorded("scontrol_show_job.txt", cluster))

    async def talk(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("triage_slurm_job", {"job_id": "17039282"}),
            await client.call_tool("triage_slurm_job", {"job_id": "99"}),
            await client.call_tool("triage_slurm_job", {"job_id": "--all"}),
        ]

    found, unknown, odd = _drive([root], talk)
    assert not found.is_error, found.content
    assert found.structured_content["diagnosis"]["failure_class"] == _cli_json(log)["diagnosis"]["failure_class"]
    assert found.structured_content["paths"] == [str(log)]
    assert "job 99 not found in Slurm accounting" in _refusal(unknown)
    assert _refusal(odd) == "'--all' is not a Slurm job id: give one like 123456, or 123456_7 for an array task"
    assert all("--all" not in call for call in slurm_stubs.calls("sacct"))  # refused before sacct ran


def test_streamable_http_on_a_real_local_port(tmp_path: Path) -> None:
    server = subprocess.Popen(
        _server("--http", "--port", "0", "--log-root", str(EXAMPLES)),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
        match = re.fullmatch(r"crashcart mcp: listening on (http://127\.0\.0\.1:(\d+)/mcp)\n", first)
        assert match, first

        async def talk() -> tuple[Any, CallToolResult]:
            async with Client(match.group(1), read_timeout_seconds=120) as client:
                return await client.list_tools(), await client.call_tool("triage_logs", {"paths": ["xid79-job"]})

        tools, report = asyncio.run(talk())
        assert {t.name for t in tools.tools} == TOOLS
        assert report.structured_content["diagnosis"]["failure_class"] == "gpu_hardware"
        rebound = httpx.post(match.group(1), json={}, headers={"Host": "attacker.example"}, timeout=30)
        assert rebound.status_code == 421  # a web page that rebinds its name to 127.0.0.1 is turned away
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C: uvicorn shuts down, and the command exits as interrupted
        code = server.wait(timeout=30)
    assert code == 130, server.stderr.read() if server.stderr else ""
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", int(match.group(2))), timeout=5)

"""crashcart/bot/work.py: the bot's asks run a bounded number at a time, each triage in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fakes.openai_server import Delay
from fakes.slack_api import BOT_TOKEN, BOT_USER, event_body, signed
from fakes.slack_bot import CHANNEL, SECRET
from proctree import alive, kill_when, parents

from crashcart.agent.llm_provider import LLMSettings
from crashcart.bot.config import BotConfig
from crashcart.bot.opened import ReadLimits
from crashcart.bot.work import AskRunner, TriageJob
from crashcart.knowledge.errors import CrashcartError

# PyTorch's allocator message, as a rank prints it.
OOM = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
# What torchrun prints when a worker fails, before the per-rank summary (torch.distributed.elastic's
# ChildFailedError): no rule can tell from it why, so triage consults the model.
UNSURE = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
)


def test_asks_beyond_the_room_are_refused_and_room_comes_back() -> None:
    runner = AskRunner(BotConfig(max_concurrent_asks=1, max_waiting_asks=1))
    go, ran = threading.Event(), []
    assert runner.submit(go.wait)  # running
    assert runner.submit(lambda: ran.append("waited"))  # waiting for the one ask thread
    assert not runner.submit(lambda: ran.append("refused"))
    go.set()
    deadline = time.monotonic() + 10
    while not runner.submit(lambda: ran.append("later")) and time.monotonic() < deadline:
        time.sleep(0.01)
    while len(ran) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == ["waited", "later"]


def test_a_triage_reports_under_the_asked_names_with_what_it_could_not_open(tmp_path: Path) -> None:
    job = tmp_path / "logs" / "job7"
    job.mkdir(parents=True)
    (job / "rank3.log").write_text(OOM)
    (job / "rank4.log").symlink_to(job / "rank4.log.1")  # rotated away
    report = AskRunner(BotConfig()).triage(_job(tmp_path, [job], roots=[tmp_path / "logs"]))
    assert report.paths == [str(job)] and report.diagnosis.failure_class.value == "gpu_oom"
    assert [e.file for e in report.diagnosis.evidence if "OutOfMemory" in e.text] == ["rank3.log"]
    assert [(s.path, s.reason) for s in report.skipped] == [("rank4.log", "cannot read (No such file or directory)")]


def _job(tmp_path: Path, paths: list[Path], roots: list[Path], **kw: object) -> TriageJob:
    return TriageJob(
        paths=paths,
        roots=roots,
        workdir=tmp_path,
        memory_path=tmp_path / "incidents.db",
        rules_path=tmp_path / "rules.db",
        limits=ReadLimits(bytes=10**9, files=10),
        **kw,  # type: ignore[arg-type]
    )


def _grandchildren() -> set[int]:
    """Processes whose parent is a child of this one: the forkserver's children."""
    ppid = parents()
    children = {pid for pid, parent in ppid.items() if parent == os.getpid()}
    return {pid for pid, parent in ppid.items() if parent in children}


def test_a_triage_process_that_dies_is_one_line_not_a_hang(tmp_path: Path, openai_server, monkeypatch) -> None:
    """What the kernel's OOM killer does to a triage: SIGKILL. The ask gets a line naming what happened."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    openai_server.script([Delay(120)])
    log = tmp_path / "job.log"
    log.write_text(UNSURE)
    job = _job(tmp_path, [log], [], llm=LLMSettings(model="openai:local-test-model", base_url=openai_server.base_url))
    runner = AskRunner(BotConfig(max_triage_seconds=60))
    before = _grandchildren()
    outcome: list[BaseException] = []
    thread = threading.Thread(target=lambda: outcome.append(_raised(runner, job)))
    thread.start()
    _wait_for_a_request(openai_server)  # the triage process is up and waiting on the model
    [triage_pid] = _grandchildren() - before
    os.kill(triage_pid, signal.SIGKILL)
    thread.join(30)
    [error] = outcome
    assert isinstance(error, CrashcartError) and "the triage process died (exit -9" in str(error)
    assert not alive(triage_pid)


def _raised(runner: AskRunner, job: TriageJob) -> BaseException:
    with pytest.raises(CrashcartError) as caught:
        runner.triage(job)
    return caught.value


def _wait_for_a_request(server) -> None:
    deadline = time.monotonic() + 60
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the triage never reached the model"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_bot_killed_with_sigkill_mid_triage_leaves_no_process(tmp_path: Path, slack_api, openai_server, monkeypatch):
    """The real `crashcart bot --http`, asked over signed HTTP; kill -9 while its triage process waits on the model."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    openai_server.script([Delay(120)])
    (tmp_path / "logs").mkdir()
    config = {
        "bot_token": BOT_TOKEN,
        "signing_secret": SECRET,
        "slack_api_url": slack_api.base_url,
        "log_roots": [str(tmp_path / "logs")],
        "memory_path": str(tmp_path / "incidents.db"),
        "rules_path": str(tmp_path / "rules.db"),
        "llm": "openai:local-test-model",
        "llm_base_url": openai_server.base_url,
    }
    (tmp_path / "bot.yaml").write_text(json.dumps(config))  # JSON is YAML
    port = _free_port()
    cmd = [str(Path(sys.executable).with_name("crashcart")), "bot", "--config", str(tmp_path / "bot.yaml")]
    cmd += ["--http", "--port", str(port)]
    event = {"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER}> ```{UNSURE}```", "ts": "7.000001"}
    body = event_body({**event, "channel": CHANNEL, "event_ts": "7.000001"})
    asked: list[int] = []

    def triaging(pid: int, members: dict[int, int]) -> bool:
        if not asked:
            asked.extend(_post(f"http://127.0.0.1:{port}/slack/events", body))
        forked = [p for p, parent in members.items() if parent != pid and parent in members]  # forkserver children
        return bool(forked) and bool(openai_server.requests)

    recorded, left = kill_when(cmd, triaging)
    assert asked == [200] and len(recorded) >= 3  # the bot, its forkserver, the triage process (and a tracker)
    assert left == [], f"still running after the bot was killed: {left} of {recorded}"


def _post(url: str, body: str) -> list[int]:
    """[status] once the bot's HTTP server answers; [] while it is still starting."""
    request = urllib.request.Request(url, data=body.encode(), headers=signed(SECRET, body), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return [response.status]
    except urllib.error.URLError:
        return []

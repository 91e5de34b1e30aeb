"""The bot end to end: signed Slack requests into the real Bolt app, its Web API calls into a local fake Slack."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from fakes.openai_server import Delay
from fakes.slack_api import BOT_TOKEN, event_body, signed
from fakes.slack_bot import CHANNEL, SECRET, texts
from fakes.slurm import recorded
from fakes.webhook import closed_port
from pydantic import SecretStr
from slack_bolt import BoltRequest

import crashcart.bot.app as bot_app
from crashcart.batch.sacct import SACCT_FIELDS
from crashcart.bot.blocks import CONFIRM, CORRECT, RULE_CONFIRM, RULE_REJECT
from crashcart.stores import open_memory, open_rule_store

# A failure no rule knows, after an HF Trainer progress line: a Zookeeper leader losing a learner, two lines in a row of
# Loghub's Zookeeper_2k.log (../shared/data)
QUORUM = (
    "{'loss': 2.1, 'learning_rate': 4.9e-05, 'epoch': 0.01}\n"
    "2015-07-29 19:04:30,989 - WARN  [LearnerHandler-/10.10.34.11:52264:LearnerHandler@575] - "
    "******* GOODBYE /10.10.34.11:52264 ********\n"
    "2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:LearnerHandler@562] - "
    "Unexpected exception causing shutdown while sock still open\n"
)
OOM = """2026-03-01 10:00:01 INFO step 10 loss 2.1
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. <!channel> <@U123ABC> @here look
"""


def _answer() -> str:
    """The scripted model's answer: node_failure, citing paste.log:3, and a proposed rule."""
    answer = {
        "failure_class": "node_failure",
        "action": "drain_node_and_retry",
        "evidence": [{"file": "paste.log", "line": 3}],
        "faulty_nodes": [],
        "stage": "training",
        "rationale": "The leader's handler for a learner died on an exception. The learner's host is gone.",
        "mitigation": ["Drain the host named in the learner-handler line and restart from the last checkpoint."],
        "proposed_rule": {
            "regex": r"LearnerHandler@\d+\] - Unexpected exception causing shutdown while sock still open",
            "failure_class": "node_failure",
            "why": "a Zookeeper leader shuts a learner's handler down when the learner's host goes",
        },
    }
    return "```json\n" + json.dumps(answer) + "\n```"


def _one_line(post) -> str:
    text = post.params["text"]
    assert "\n" not in text and not post.params.get("blocks"), text
    return text


def test_session_ask_reply_confirm_and_rule_decisions(make_bot, fake_chat, bot_config) -> None:
    """ask → thread reply with diagnosis → confirm → incident in memory → rule refused for one user, confirmed
    by an allowed one."""
    bot = make_bot(chat_model=fake_chat([_answer()]))
    ask_ts = bot.mention("what killed this job?\n```" + QUORUM + "```")

    (eyes,) = bot.api.wait("reactions.add")
    assert (eyes.params["name"], eyes.params["timestamp"]) == ("eyes", ask_ts)
    reply = bot.next_post()
    assert reply.params["channel"] == CHANNEL and reply.params["thread_ts"] == ask_ts
    shown = texts(reply.params["blocks"])
    assert "crashcart: node_failure → drain_node_and_retry" in shown
    assert (
        "`paste.log:3`\n```2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:LearnerHandler@562] - "
        "Unexpected exception" in shown
    )
    assert "1. Drain the host named in the learner-handler line" in shown
    assert "*Proposed rule*" in shown and "(decided by llm)" in shown

    assert bot.click(reply, CONFIRM, user="UBOB").status == 200
    (update,) = bot.api.wait("chat.update")
    memory = open_memory(bot_config.memory_path)
    (incident,) = memory.list()
    assert (incident.failure_class.value, incident.provenance.confirmed_by) == ("node_failure", "slack:UBOB")
    assert incident.evidence[0].text.endswith(
        "10.10.34.11:52265:LearnerHandler@562] - Unexpected exception causing shutdown while sock still open"
    )
    assert update.params["ts"] == reply.ts and f"stored as incident `{incident.id}`" in update.params["text"]
    assert CONFIRM not in json.dumps(update.params["blocks"])  # the buttons are gone
    assert RULE_CONFIRM in json.dumps(update.params["blocks"])  # the rule's are not

    rules = open_rule_store(bot_config.rules_path)
    (proposal,) = rules.list()
    assert bot.click(reply, RULE_CONFIRM, user="UBOB").status == 200
    refusal = bot.next_post()
    assert _one_line(refusal).startswith(":warning: user UBOB may not confirm or reject rules")
    assert refusal.params["thread_ts"] == ask_ts and rules.get(proposal.id).status == "pending"

    assert bot.click(reply, RULE_CONFIRM, user="UALICE").status == 200
    done = bot.api.wait("chat.update", 2)[-1]
    assert rules.get(proposal.id).status == "confirmed" and rules.get(proposal.id).decided_by == "slack:UALICE"
    assert f"rule `user.{proposal.id}` confirmed by <@UALICE>" in done.params["text"]
    assert [r.id for r in rules.confirmed_rules()] == [f"user.{proposal.id}"]

    assert bot.click(reply, CONFIRM, user="UCAROL").status == 200  # a stale button: refused, nothing stored
    assert "already confirmed by slack:UBOB" in _one_line(bot.next_post())
    assert memory.count() == 1


def test_correction_stores_the_picked_class_and_offers_a_rule(make_bot, bot_logs: Path, bot_config) -> None:
    (bot_logs / "job7").mkdir()
    (bot_logs / "job7" / "rank3.log").write_text(OOM)
    bot = make_bot()
    bot.mention("job7/")
    reply = bot.next_post()
    assert "crashcart: gpu_oom → fix_job" in texts(reply.params["blocks"])

    bot.click(reply, CORRECT, user="UBOB", option="|code_bug")
    (update,) = bot.api.wait("chat.update")
    (incident,) = open_memory(bot_config.memory_path).list()
    assert (incident.failure_class.value, incident.action.value) == ("code_bug", "fix_job")
    assert incident.provenance.job == str((bot_logs / "job7").resolve())
    assert "corrected to `code_bug` by <@UBOB>" in update.params["text"]
    offer = bot.next_post()  # the rules missed code_bug: a rule derived from the evidence line waits for review
    (proposal,) = open_rule_store(bot_config.rules_path).list(status="pending")
    assert proposal.failure_class.value == "code_bug" and proposal.origin == "template"
    assert offer.params["text"] == f"proposed rule {proposal.id}"
    assert bot.click(offer, RULE_REJECT, user="UALICE").status == 200
    bot.api.wait("chat.update", 2)
    assert open_rule_store(bot_config.rules_path).get(proposal.id).status == "rejected"


def test_log_text_cannot_ping_anyone(make_bot, bot_logs: Path) -> None:
    (bot_logs / "rank3.log").write_text(OOM)
    bot = make_bot()
    bot.mention(f"{bot_logs}/rank3.log")
    reply = bot.next_post()
    raw = json.dumps(reply.params)
    assert "<!channel>" not in raw and "<@U123ABC>" not in raw and "@here" not in raw
    assert "&lt;!channel&gt; &lt;@U123ABC&gt; @\u200bhere look" in texts(reply.params["blocks"])


def test_each_diagnosis_also_goes_to_the_configured_channels_and_a_dead_one_is_logged(
    make_bot, bot_logs: Path, webhook, caplog
) -> None:
    (bot_logs / "rank3.log").write_text(OOM)
    down = f"json://bot:s3cretpw@127.0.0.1:{closed_port()}/hook"
    bot = make_bot(notify=[SecretStr(down), SecretStr(webhook.url("json", "/bot"))])
    with caplog.at_level(logging.WARNING, logger="crashcart.bot"):
        bot.mention(f"{bot_logs}/rank3.log")
        reply = bot.next_post()
        [post] = webhook.wait(1)
        deadline = time.monotonic() + 10  # the failures are logged once every channel was tried
        while not any("notify" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "gpu_oom" in reply.params["text"] and post.body["title"].startswith("crashcart: gpu_oom → fix_job")
    assert "rank3.log:2: [rank3]: torch.OutOfMemoryError" in post.body["message"]
    assert "<!channel>" not in post.body["message"] and "@here" not in post.body["message"]  # pings nobody
    [line] = [r.getMessage() for r in caplog.records if "notify" in r.getMessage()]
    assert line.startswith("notify json://bot:") and "127.0.0.1" in line and "s3cretpw" not in caplog.text
    assert "s3cretpw" not in repr(bot.config)


def test_paths_outside_the_roots_are_refused_in_one_line(make_bot, bot_logs: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.log").write_text(OOM)
    (bot_logs / "escape.log").symlink_to(tmp_path / "secret.log")
    (bot_logs / "sub").mkdir()
    (bot_logs / "sub" / "link.log").symlink_to(tmp_path / "secret.log")
    bot = make_bot()
    for ask, said in [
        ("/etc/shadow", "/etc/shadow is outside the log roots"),
        ("../secret.log", "../secret.log is outside the log roots"),
        (f"{bot_logs}/../secret.log", "secret.log is outside the log roots"),
        ("escape.log", "escape.log is outside the log roots"),
        ("sub/", "sub/ holds a symlink out of the log roots (link.log)"),
        ("nope/none.log", "no such file or folder under the log roots: nope/none.log"),
    ]:
        bot.mention(ask)
        assert said in _one_line(bot.next_post()), ask
    assert not bot.api.downloads


def test_oversized_paste_is_refused(make_bot) -> None:
    bot = make_bot()
    bot.mention("```" + "x" * 5000 + "\n```")
    assert "over the bot's limit of 4,000 (max_paste_bytes)" in _one_line(bot.next_post())


def test_an_uploaded_log_is_downloaded_with_the_token_and_triaged(make_bot) -> None:
    bot = make_bot()
    bot.api.add_file("F1", "rank3.log", OOM.encode())
    bot.api.add_file("F2", "big.log", b"x", size=200_000)
    bot.api.add_file("F3", "evil.log", OOM.encode(), url="http://files.example.com/evil.log")
    bot.mention("", files=[{"id": "F1"}])
    assert "crashcart: gpu_oom → fix_job" in texts(bot.next_post().params["blocks"])
    assert [d["token"] for d in bot.api.downloads] == [BOT_TOKEN]

    bot.mention("", files=[{"id": "F2"}])
    assert "big.log is 200,000 bytes, over the bot's upload limit" in _one_line(bot.next_post())
    bot.mention("", files=[{"id": "F3"}])
    assert "downloads only from 127.0.0.1, not files.example.com" in _one_line(bot.next_post())
    assert len(bot.api.downloads) == 1


def test_a_slurm_job_id_reads_the_jobs_logs_under_the_roots(
    make_bot, bot_logs: Path, tmp_path: Path, slurm_stubs, monkeypatch
) -> None:
    """The real crashcart.batch.slurm, against sacct/scontrol stubs replaying what Slurm 22.05 printed."""
    cluster = bot_logs / "slurm0"  # the recording cluster's folder, moved under the bot's log root
    log = cluster / "jobs" / "logs" / "train-oom-17039282.out"  # scontrol's StdOut for job 17039282
    log.parent.mkdir(parents=True)
    log.write_text(OOM)
    outside = tmp_path / "elsewhere" / "secret.log"
    outside.parent.mkdir()
    outside.write_text("not the bot's to read\n")
    slurm_stubs.stub(
        "sacct",
        {
            "--jobs 13": f"13|13|peek|FAILED|1:0|ann|vm|cpu=1|5|2026-12-01T07:01:13|2026-12-01T07:01:18|/w|{outside}|"
            "sbatch peek.sh\n",  # its comment names a log outside the roots
            "--jobs 77": "77|77|odd|FAILED|1:0|ann|vm|cpu=1|soon|Unknown|Unknown|/w||sbatch odd.sh\n",  # odd values
            "": recorded("sacct_failed_nodefail.txt", cluster),
        },
    )
    slurm_stubs.stub("scontrol", recorded("scontrol_show_job.txt", cluster))
    bot = make_bot()
    bot.mention("job 17039282")
    assert "crashcart: gpu_oom → fix_job" in texts(bot.next_post().params["blocks"])
    bot.mention("13")
    assert f"{outside} is outside the log roots" in _one_line(bot.next_post())
    bot.mention("77")
    assert _one_line(bot.next_post()) == (  # an elapsed time of 'soon' is no number, not a crash
        ":warning: Slurm job 77 has no log files that the bot can find; give the log path instead"
    )
    bot.mention("99")
    assert "job 99 not found in Slurm accounting: check the id with `sacct -j 99`" in _one_line(bot.next_post())
    fields = ",".join(SACCT_FIELDS)
    asked = [
        ["--parsable2", "--noheader", "--allocations", "--jobs", job, "--format", fields]
        for job in ("17039282", "13", "77", "99")
    ]
    asked.insert(3, ["--batch-script", "--jobs", "77"])  # no output path in its row: the submit script may name one
    assert slurm_stubs.calls("sacct") == asked
    assert slurm_stubs.calls("scontrol") == [["--oneliner", "show", "job", job] for job in ("17039282", "13", "77")]

    monkeypatch.setenv("PATH", str(tmp_path / "bin-without-slurm"))  # Slurm is not installed here
    bot.mention("job 17039282")
    assert "sacct not found: run on a Slurm login node" in _one_line(bot.next_post())


def test_slash_command_acks_at_once_and_answers_in_a_thread(make_bot, bot_logs: Path) -> None:
    (bot_logs / "rank3.log").write_text(OOM)
    bot = make_bot()
    ack = bot.command("rank3.log")
    assert ack.status == 200 and "crashcart is on it: rank3.log" in ack.body
    parent, reply = bot.next_post(), bot.next_post()
    assert parent.params["text"] == "<@UASKER> asked crashcart about rank3.log" and "thread_ts" not in parent.params
    assert reply.params["thread_ts"] == parent.ts
    assert "gpu_oom" in reply.params["text"]
    assert "a log path under the log roots" in bot.command("").body  # no ask: the help, nothing posted
    assert len(bot.api.of("chat.postMessage")) == 2


def test_a_direct_message_is_answered_in_its_thread(make_bot, bot_logs: Path) -> None:
    (bot_logs / "rank3.log").write_text(OOM)
    bot = make_bot()
    event = {
        "type": "message",
        "channel_type": "im",
        "user": "UASKER",
        "text": "rank3.log",
        "ts": "1.000001",
        "channel": "DTEST",
        "event_ts": "1.000001",
    }
    assert bot.send(event_body(event)).status == 200
    reply = bot.next_post()
    assert (reply.params["channel"], reply.params["thread_ts"]) == ("DTEST", "1.000001")
    assert "gpu_oom" in reply.params["text"]


def test_errors_reply_in_one_line_and_the_app_keeps_serving(make_bot, bot_logs: Path, monkeypatch) -> None:
    (bot_logs / "rank3.log").write_text(OOM)
    (bot_logs / "empty").mkdir()
    bot = make_bot()
    real = bot_app.gather
    monkeypatch.setattr(bot_app, "gather", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("disk\non fire")))
    bot.mention("rank3.log")
    assert _one_line(bot.next_post()) == (
        ":boom: internal error: RuntimeError: disk on fire (the bot's log has the traceback)"
    )
    bot.mention("hello there")
    assert "ask me about a failed job" in _one_line(bot.next_post())
    bot.api.fail("chat.postMessage", "channel_not_found")  # a failing post is logged, not raised
    bot.mention("rank3.log")
    bot.next_post()
    monkeypatch.setattr(bot_app, "gather", real)
    bot.mention("empty/")  # refused inside the triage process: the line names the asked folder, not its links
    assert _one_line(bot.next_post()) == (
        f":warning: no log files under {(bot_logs / 'empty').resolve()}: expected text, .gz or .zst files"
    )
    bot.mention("rank3.log")
    assert "gpu_oom" in bot.next_post().params["text"]


# -- races and limits: what one ask may read, and for how long -----------------------------------------------

# What torchrun prints when a worker fails, before the per-rank summary (torch.distributed.elastic's
# ChildFailedError): no rule can tell from it why, so triage consults the model.
LAUNCHER = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
)
# The CUDA runtime's error for a bad device address, as PyTorch raises it (torch/csrc/cuda): in a log outside the
# roots, where the bot must never read it.
ILLEGAL = "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def test_a_symlink_swapped_in_after_the_check_is_not_read(make_bot, bot_logs: Path, tmp_path: Path, monkeypatch):
    """The path is checked in the ask thread and read in the triage process. A user who owns the job folder swaps
    it for a symlink out of the roots in between (deterministic here: the swap runs right after the check)."""
    (bot_logs / "job7").mkdir()
    (bot_logs / "job7" / "rank3.log").write_text(OOM)
    secret = tmp_path / "secret" / "job7"
    secret.mkdir(parents=True)
    (secret / "rank3.log").write_text(ILLEGAL)
    real = bot_app.gather

    def gather_then_swap(*args, **kwargs):
        logs = real(*args, **kwargs)
        (bot_logs / "job7").rename(bot_logs / "job7.old")
        (bot_logs / "job7").symlink_to(secret, target_is_directory=True)
        return logs

    monkeypatch.setattr(bot_app, "gather", gather_then_swap)
    bot = make_bot()
    bot.mention("job7/rank3.log")
    reply = bot.next_post()
    assert "job7/rank3.log leads out of the log roots crashcart may read" in _one_line(reply)
    assert "illegal memory access" not in json.dumps(reply.params)


def test_an_ask_over_the_read_limit_is_refused_without_reading(make_bot, bot_logs: Path) -> None:
    """Three sparse 1 GB files: reading them would take minutes; the sizes alone refuse the ask."""
    job = bot_logs / "huge"
    job.mkdir()
    for i in range(3):
        with (job / f"rank{i}.log").open("wb") as fh:
            fh.truncate(1_000_000_000)
    bot = make_bot(max_read_bytes=1_500_000_000)
    began = time.monotonic()
    bot.mention("huge/")
    line = _one_line(bot.next_post())
    assert "huge holds more than 1,500,000,000 bytes of logs, over the bot's limit (max_read_bytes)" in line
    assert time.monotonic() - began < 15


def _slow_model(openai_server, monkeypatch) -> dict:
    """A model that never answers in time: LAUNCHER's triage waits on it."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    openai_server.script([Delay(120)])
    return {"llm": "openai:local-test-model", "llm_base_url": openai_server.base_url}


def test_a_slow_triage_is_stopped_at_the_time_limit_while_other_asks_are_answered(
    make_bot, openai_server, monkeypatch
) -> None:
    bot = make_bot(**_slow_model(openai_server, monkeypatch), max_triage_seconds=10, max_concurrent_asks=2)
    slow = bot.mention("```" + LAUNCHER + "```")
    fast = bot.mention("```" + OOM + "```")  # the rules are sure: no model, an answer in seconds
    first = bot.next_post()
    assert first.params["thread_ts"] == fast and "gpu_oom" in first.params["text"]
    stopped = bot.next_post()
    assert stopped.params["thread_ts"] == slow
    assert "triage took longer than 10 s, the bot's limit (max_triage_seconds), and was stopped" in _one_line(stopped)
    assert len(openai_server.requests) == 1


def test_a_model_that_never_answers_gives_way_to_the_rules_after_llm_timeout_s(
    make_bot, openai_server, monkeypatch
) -> None:
    bot = make_bot(**_slow_model(openai_server, monkeypatch), llm_timeout_s=1, max_triage_seconds=60)
    began = time.monotonic()
    bot.mention("```" + LAUNCHER + "```")
    reply = bot.next_post()
    # the rules' verdict: a launcher summary with no cause in it is a weak code_bug symptom (its traceback)
    assert reply.params["text"] == "crashcart: code_bug → fix_job (not localised to a node)"
    assert reply.params["blocks"]  # the whole report, not the one line of a stopped triage
    assert time.monotonic() - began < 20  # the 1 s deadline (and the triage process's start), not the default 30 s
    assert len(openai_server.requests) == 1


def _until(done: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait for `done`: Bolt runs each event's listener on its own thread, in no fixed order."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_asks_beyond_the_bots_room_are_turned_away_in_one_line(make_bot, openai_server, monkeypatch) -> None:
    limits = {"max_triage_seconds": 6, "max_concurrent_asks": 1, "max_waiting_asks": 0}
    bot = make_bot(**_slow_model(openai_server, monkeypatch), **limits)
    slow = bot.mention("```" + LAUNCHER + "```")
    _until(lambda: openai_server.calls == 1)  # the slow ask holds the one place: its triage is asking the model
    turned = bot.mention("```" + OOM + "```")
    posts = {post.params["thread_ts"]: post for post in (bot.next_post(), bot.next_post())}  # in either order
    assert _one_line(posts[turned]).startswith(":hourglass: crashcart is full (1 asks running or waiting")
    assert "and was stopped" in _one_line(posts[slow])  # stopped at the time limit: room again
    bot.mention("```" + OOM + "```")
    assert "gpu_oom" in bot.next_post().params["text"]


def test_requests_with_a_bad_or_stale_signature_are_rejected(make_bot) -> None:
    bot = make_bot()
    body = event_body({"type": "app_mention", "user": "U1", "text": "x", "ts": "1.1", "channel": CHANNEL})
    assert bot.send(body, secret="not-the-secret").status == 401
    stale = signed(SECRET, body, timestamp=1_600_000_000)
    assert bot.app.dispatch(BoltRequest(body=body, headers=stale)).status == 401
    assert bot.send(body).status == 200
    assert "ask me about a failed job" in _one_line(bot.next_post())  # only the signed one got an answer
    assert len(bot.api.of("reactions.add")) == 1 and len(bot.api.of("chat.postMessage")) == 1


def test_socket_mode_requests_need_no_signature(make_bot, bot_logs: Path) -> None:
    """What SocketModeHandler hands the app: the payload as a dict, mode socket_mode, no HTTP headers."""
    (bot_logs / "rank3.log").write_text(OOM)
    bot = make_bot()
    event = json.loads(
        event_body(
            {
                "type": "app_mention",
                "user": "U1",
                "text": "<@UCRASHBOT> rank3.log",
                "ts": "5.000001",
                "channel": CHANNEL,
                "event_ts": "5.000001",
            }
        )
    )
    assert bot.app.dispatch(BoltRequest(body=event, mode="socket_mode")).status == 200
    assert "gpu_oom" in bot.next_post().params["text"]


def test_an_upload_that_decompresses_past_the_cap_is_read_to_the_cap(make_bot, bot_config) -> None:
    """A small .zst can hold gigabytes (issue 9): the bot reads max_decompressed_bytes of it, and says so."""
    import zstandard

    # 36 MB of torchrun's start-up warning as CloudWatch showed it (aws/aws-ofi-nccl#715, in
    # knowledge/healthy/torchrun.log), in a few KB; no progress line, which after the OOM would say the rank trained
    # on past it
    filler = (
        "  | 2024-12-04T05:26:27.056Z | W1204 05:26:26.878000 17959 site-packages/torch/distributed/run.py:793] "
        "*****************************************\n"
    ) * 250_000
    bot = make_bot(max_decompressed_bytes=50_000)
    bot.api.add_file("F1", "rank3.log.zst", zstandard.ZstdCompressor(level=19).compress((OOM + filler).encode()))
    bot.mention("", files=[{"id": "F1"}])
    assert "crashcart: gpu_oom → fix_job" in texts(bot.next_post().params["blocks"])
    [saved] = [json.loads(p.read_text()) for p in bot_config.reports_dir.glob("*.json")]
    [skipped] = saved["report"]["skipped"]
    assert skipped["path"] == "rank3.log.zst" and saved["report"]["stats"]["bytes"] == 50_000
    assert "more than 50,000 bytes, the limit set by max_decompressed_bytes in the bot config" in skipped["reason"]

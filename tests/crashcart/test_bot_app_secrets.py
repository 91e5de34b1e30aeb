"""The bot end to end on secrets (crashcart/bot/app.py): a job whose log holds the whole secret corpus is asked
about in Slack, its rarest error lines are the evidence, and nothing the bot sends to the (local, fake) Slack Web
API holds a secret or an 8-character piece of one."""

from __future__ import annotations

from fakes.secrets import LINES, SECRETS, leaks
from fakes.slack_bot import texts


def test_no_secret_of_the_corpus_reaches_slack(make_bot) -> None:
    log = "2026-03-01 10:00:01 INFO node07 step 100 loss 2.11\n" + "".join(f"ERROR {ln.text}\n" for ln in LINES)
    bot = make_bot()
    bot.api.add_file("F1", "job.log", log.encode())  # an upload: the corpus is more than a paste may hold
    bot.mention("what killed this job?", files=[{"id": "F1"}])
    reply = bot.next_post()
    assert "blocks" in reply.params, reply.params.get("text")
    shown = texts(reply.params["blocks"])
    assert "```ERROR " in shown and "[REDACTED:" in shown  # the rarest error lines are the evidence
    assert leaks([call.params for call in bot.api.calls]) == {}


def test_a_reply_built_outside_the_blocks_is_redacted_too(make_bot) -> None:
    """A one-line refusal quotes what was asked: a token pasted into a path must not come back in it."""
    bot = make_bot()
    bot.mention(f"/elsewhere/{SECRETS['gh']}/rank0.log")
    reply = bot.next_post()
    assert "outside the log roots" in reply.params["text"]
    assert leaks([call.params for call in bot.api.calls]) == {}

"""A bot under test: the real Bolt app, signed requests in, a fake Slack Web API out (no network).

The fixtures that build one (make_bot, bot_config, log_root) are in tests/crashcart/bot/conftest.py.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse

from crashcart.bot.config import BotConfig
from fakes.slack_api import BOT_USER, Call, FakeSlackAPI, action_body, command_body, event_body, signed

SECRET = "test-signing-secret"
CHANNEL = "CTEST"
FORM = "application/x-www-form-urlencoded"
_ts = itertools.count(1)


@dataclass
class Bot:
    """Drive the app as Slack would: `ask(...)`, `click(...)`; read what it posted from `api`."""

    app: App
    api: FakeSlackAPI
    config: BotConfig
    posts_seen: int = field(default=0)

    def send(self, body: str, content_type: str = "application/json", secret: str = SECRET) -> BoltResponse:
        return self.app.dispatch(BoltRequest(body=body, headers=signed(secret, body, content_type=content_type)))

    def mention(self, text: str, files: list[dict] | None = None, user: str = "UASKER") -> str:
        """An @crashcart mention in the test channel; returns its ts (the thread the reply goes to)."""
        ts = f"1699999999.{next(_ts):06d}"
        event = {
            "type": "app_mention",
            "user": user,
            "text": f"<@{BOT_USER}> {text}",
            "ts": ts,
            "channel": CHANNEL,
            "event_ts": ts,
            **({"files": files} if files else {}),
        }
        assert self.send(event_body(event)).status == 200
        return ts

    def command(self, text: str, user: str = "UASKER") -> BoltResponse:
        return self.send(command_body(text, user, CHANNEL, self.api.root + "/response/1"), FORM)

    def next_post(self) -> Call:
        """The next chat.postMessage the bot makes (waits for it)."""
        self.posts_seen += 1
        return self.api.wait("chat.postMessage", self.posts_seen)[-1]

    def click(self, post: Call, action_id: str, user: str, option: str | None = None) -> BoltResponse:
        """A click on the element `action_id` of a posted message (for a select, the option whose value ends
        with `option`)."""
        block, element = find_element(post.params["blocks"], action_id)
        action: dict[str, Any] = {"action_id": action_id, "block_id": block["block_id"], "type": element["type"]}
        if element["type"] == "button":
            action["value"] = element["value"]
        else:
            action["selected_option"] = next(o for o in element["options"] if o["value"].endswith(option or ""))
        message = {
            "type": "message",
            "ts": post.ts,
            "thread_ts": post.params.get("thread_ts"),
            "text": post.params.get("text"),
            "blocks": post.params["blocks"],
        }
        return self.send(action_body(action, user, CHANNEL, message, self.api.root + "/response/2"), FORM)


def find_element(blocks: list[dict], action_id: str) -> tuple[dict, dict]:
    for block in blocks:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return block, element
    raise AssertionError(f"no element {action_id} in the message")


def texts(blocks: list[dict]) -> str:
    """All the mrkdwn/plain text of a message's blocks, joined."""
    out = []
    for b in blocks:
        if "text" in b:
            out.append(b["text"]["text"])
        out += [e["text"] for e in b.get("elements", []) if e.get("type") == "mrkdwn"]
    return "\n".join(out)

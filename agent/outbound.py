"""The one gate for text that leaves the machine: the model's requests, Slack messages, and any channel after them
(webhooks, MCP, HTML reports) call `outbound` on what they send, and `clip` wherever they cut text to a length.

Secrets go always (a typed placeholder, never restorable). Host names and IPs stay unless the caller passes its
own Redactor that pseudonymises them, as the LLM agent does with --redact-hosts: people reading Slack need the
real node names, a model provider does not.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel

from crashcart.agent.redact import Redactor

T = TypeVar("T")


def outbound(value: T, redactor: Redactor | None = None) -> T:
    """`value` with every string in it redacted: a str, a JSON-like structure (Slack blocks), or a pydantic record
    (a Report), which comes back as a new record of the same type."""
    return _walk(value, redactor or Redactor())


def clip(text: str, limit: int, redactor: Redactor | None = None) -> str:
    """Redacted, then cut to `limit` characters: a secret cut first would leave a head no pattern recognises."""
    clean = (redactor or Redactor()).redact(text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _walk(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, Enum):
        return value  # a closed set (failure class, action): no free text
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, BaseModel):
        return type(value).model_validate(_walk(value.model_dump(), redactor))
    if isinstance(value, dict):
        return {k: _walk(v, redactor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, redactor) for v in value)
    return value

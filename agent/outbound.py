"""The one gate for text that leaves the machine: the model's requests, Slack messages, and any channel after them
(webhooks, MCP, HTML reports) call `outbound` on what they send, and `clip` wherever they cut text to a length.

Secrets go always (a typed placeholder, never restorable), from a report's masked templates too: masking can cut
a secret into pieces no pattern knows (`xoxb-<NUM>-<NUM>-AbCd...`), so such a template goes as its example line
redacted, or is redacted with its placeholders filled in. Host names and IPs stay unless the caller passes its
own Redactor that pseudonymises them, as the LLM agent does with --redact-hosts: people reading Slack need the
real node names, a model provider does not.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel

from crashcart.agent.redact import Redactor
from crashcart.agent.report import Report

_PLACEHOLDER = re.compile(r"<[A-Z*]+>")  # parsers/masking.py's <NUM>, <HEX>, <IP>, <PATH> ...

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
    if isinstance(value, Report):
        value = _unmasked_secrets(value, redactor)
    if isinstance(value, BaseModel):
        return type(value).model_validate(_walk(value.model_dump(), redactor))
    if isinstance(value, dict):
        return {k: _walk(v, redactor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, redactor) for v in value)
    return value


def _unmasked_secrets(report: Report, redactor: Redactor) -> Report:
    """The report with every masked template that may hide a secret replaced by text the redactor can see whole."""
    stats = [s.model_copy(update={"template": _template(s.template, s.first.text, redactor)}) for s in report.templates]
    as_sent = {s.template: t.template for s, t in zip(report.templates, stats, strict=True)}
    shown = [as_sent.get(t) or _template(t, None, redactor) for t in report.fingerprint.templates]
    fingerprint = report.fingerprint.model_copy(update={"templates": shown})
    return report.model_copy(update={"templates": stats, "fingerprint": fingerprint})


def _template(template: str, example: str | None, redactor: Redactor) -> str:
    """The template's example line, redacted, when that line holds a secret; else the template with its
    placeholders filled in, redacted, when that reveals one; else the template."""
    if example is not None and (clean := redactor.redact(example)) != example:
        return clean
    filled = _PLACEHOLDER.sub("0", template)
    clean = redactor.redact(filled)
    return clean if clean != filled else template

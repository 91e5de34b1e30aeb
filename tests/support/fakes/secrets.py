"""Fake secrets in the lines real programs print them in (secrets_corpus.yaml), and the check that none leaked.

A leak is a whole value or any piece of it of LEAK_PIECE characters or more: a line cut before redaction leaves
a head that no pattern recognises, and that head is still a secret.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).with_name("secrets_corpus.yaml")
LEAK_PIECE = 8


@dataclass(frozen=True)
class SecretLine:
    family: str
    where: str
    text: str
    names: tuple[str, ...]  # the values the line holds


def _load() -> tuple[dict[str, str], list[SecretLine]]:
    data = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    values = {name: "".join(parts) for name, parts in data["values"].items()}
    lines = []
    for entry in data["lines"]:
        names = tuple(n for _, n, _, _ in string.Formatter().parse(entry["text"]) if n)
        lines.append(SecretLine(entry["family"], entry["where"], entry["text"].format(**values), names))
    return values, lines


SECRETS, LINES = _load()


def leaks(sent: Any, secrets: dict[str, str] = SECRETS) -> dict[str, str]:
    """name -> the piece of that secret found in `sent` (text, or anything JSON-serialisable), for every leak."""
    text = "\n".join(_strings(sent))
    found = {}
    for name, value in secrets.items():
        pieces = (value[i : i + LEAK_PIECE] for i in range(len(value) - LEAK_PIECE + 1))
        piece = value if value in text else next((p for p in pieces if p in text), None)
        if piece is not None:
            found[name] = piece
    return found


def _strings(value: Any) -> list[str]:
    """Every string inside `value` (Slack blocks, a JSON report, messages), as sent: nothing JSON-escaped."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return [] if value is None else [str(value)]

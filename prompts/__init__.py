"""Prompt templates shipped as data files, loaded by name through one loader."""

from __future__ import annotations

import string
from pathlib import Path

PROMPT_DIR = Path(__file__).parent


class PromptError(KeyError):
    """A prompt name that does not exist, or a template variable left without a value."""


def names() -> list[str]:
    """Every shipped prompt, by name (the file stem)."""
    return sorted(p.stem for p in PROMPT_DIR.glob("*.md"))


def render(name: str, **values: str) -> str:
    """The prompt `name` with every `$variable` filled; a missing one is an error, never left raw."""
    path = PROMPT_DIR / f"{name}.md"
    if not path.is_file():
        raise PromptError(f"no prompt named {name!r}; shipped prompts: {', '.join(names())}")
    try:
        return string.Template(path.read_text(encoding="utf-8")).substitute(values)
    except KeyError as exc:
        raise PromptError(f"prompt {name!r} needs a value for ${exc.args[0]}") from exc

"""What the knowledge loaders share: reading a versioned YAML file into a strict model, and one line that
says what is wrong in it, and where."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from crashcart.knowledge.errors import KnowledgeError

M = TypeVar("M", bound=BaseModel)
# libyaml's parser when PyYAML was built with it (the wheels are): the pure-Python one took 0.3-0.45 s of every
# start over the signature files alone.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_versioned(path: Path, model: type[M], what: str, version: int, context: dict[str, object] | None = None) -> M:
    """`path` validated as `model` (with the validation `context`, if any); any problem, or a format version other
    than `version`, is a KnowledgeError naming the file (`what` says which kind of file it is: "rule file" ...)."""
    try:
        parsed = model.model_validate(yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER), context=context)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise KnowledgeError(f"invalid {what} {path}: {describe(exc)}") from exc
    found = getattr(parsed, "version", version)
    if found != version:
        raise KnowledgeError(f"{what} {path} has version {found}; expected {version}")
    return parsed


def describe(exc: Exception) -> str:
    """The first problem of a failed load, with its location (`rules.3.pattern: ...`), on one line."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

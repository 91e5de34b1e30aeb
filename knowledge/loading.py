"""What the knowledge loaders share: reading a versioned YAML file into a strict model, and one line that
says what is wrong in it, and where.

A file read before is taken from the user's cache folder as the validated model's JSON, filed under a digest of
the file's bytes, the model and the pydantic release: reading 350 signatures as YAML took 35 ms of every start,
as JSON 4 ms. JSON, not pickle: a cache entry is data, validated again on the way in, never code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.version import VERSION as PYDANTIC_VERSION

from crashcart.knowledge import filecache
from crashcart.knowledge.errors import KnowledgeError

M = TypeVar("M", bound=BaseModel)
CACHE_KIND = "knowledge"
CACHE_KEEP = 64  # entries kept: the 17 shipped files and a user's rule files, over a few edits and upgrades


def load_versioned(path: Path, model: type[M], what: str, version: int, context: dict[str, object] | None = None) -> M:
    """`path` validated as `model` (with the validation `context`, if any); any problem, or a format version other
    than `version`, is a KnowledgeError naming the file (`what` says which kind of file it is: "rule file" ...)."""
    try:
        raw = path.read_bytes()
        cached = filecache.entry(CACHE_KIND, _material(raw, model, context), ".json")
        parsed = _from_cache(cached, model, context)
        if parsed is None:
            parsed = model.model_validate(_yaml(raw.decode("utf-8")), context=context)
            filecache.store(cached, parsed.model_dump_json().encode(), CACHE_KEEP)
    except (OSError, UnicodeDecodeError, YamlError, ValidationError) as exc:
        raise KnowledgeError(f"invalid {what} {path}: {describe(exc)}") from exc
    found = getattr(parsed, "version", version)
    if found != version:
        raise KnowledgeError(f"{what} {path} has version {found}; expected {version}")
    return parsed


class YamlError(ValueError):
    """A file that is not YAML (PyYAML's own error, whose module is imported only when a file is parsed)."""


def _yaml(text: str) -> object:
    """The YAML document in `text`. PyYAML is imported here, on a cache miss only: a start that finds every file in
    the cache never pays its import. libyaml's parser when PyYAML was built with it (the wheels are): the
    pure-Python one took 0.3-0.45 s of every start over the signature files alone."""
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from exc


def _material(raw: bytes, model: type[BaseModel], context: dict[str, object] | None) -> bytes:
    described = (PYDANTIC_VERSION, model.__module__, model.__qualname__, sorted((context or {}).items()))
    return repr(described).encode() + raw


def _from_cache(path: Path, model: type[M], context: dict[str, object] | None) -> M | None:
    data = filecache.read(path)
    if data is None:
        return None
    try:
        return model.model_validate_json(data, context=context)
    except ValidationError:  # damaged, or written by another release of the model: read the YAML again
        return None


def describe(exc: Exception) -> str:
    """The first problem of a failed load, with its location (`rules.3.pattern: ...`), on one line."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

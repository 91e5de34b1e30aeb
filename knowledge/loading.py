"""What the knowledge loaders share: one line that says what is wrong in a data file, and where."""

from __future__ import annotations

from pydantic import ValidationError


def describe(exc: Exception) -> str:
    """The first problem of a failed load, with its location (`rules.3.pattern: ...`), on one line."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

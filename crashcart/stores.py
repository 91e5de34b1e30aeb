"""Where crashcart keeps what it learns on this machine: the incident memory and the rule queue."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from crashcart.knowledge.rule_store import SqliteRuleStore

if TYPE_CHECKING:  # the store brings faiss and numpy: imported when a store is opened
    from crashcart.knowledge.incident_store import SqliteIncidentStore

MEMORY_ENV = "CRASHCART_MEMORY"
RULES_ENV = "CRASHCART_RULES"


def data_dir() -> Path:
    """$XDG_DATA_HOME/crashcart (~/.local/share/crashcart by default)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "crashcart"


def default_memory_path() -> Path:
    """$CRASHCART_MEMORY, else data_dir()/incidents.db."""
    return Path(os.environ[MEMORY_ENV]) if os.environ.get(MEMORY_ENV) else data_dir() / "incidents.db"


def default_rules_path() -> Path:
    """$CRASHCART_RULES, else data_dir()/rules.db."""
    return Path(os.environ[RULES_ENV]) if os.environ.get(RULES_ENV) else data_dir() / "rules.db"


@overload
def open_memory(path: str | Path | None = ..., *, create: Literal[True]) -> SqliteIncidentStore: ...
@overload
def open_memory(path: str | Path | None = ..., *, create: bool = ...) -> SqliteIncidentStore | None: ...
def open_memory(path: str | Path | None = None, *, create: bool = False) -> SqliteIncidentStore | None:
    """The incident store at path (or the default); None when it does not exist and create is False."""
    where = Path(path) if path is not None else default_memory_path()
    if not (create or where.exists()):
        return None
    from crashcart.knowledge.incident_store import SqliteIncidentStore

    return SqliteIncidentStore(where)


@overload
def open_rule_store(path: str | Path | None = ..., *, create: Literal[True]) -> SqliteRuleStore: ...
@overload
def open_rule_store(path: str | Path | None = ..., *, create: bool = ...) -> SqliteRuleStore | None: ...
def open_rule_store(path: str | Path | None = None, *, create: bool = False) -> SqliteRuleStore | None:
    """The rule store at path (or the default); None when it does not exist and create is False."""
    where = Path(path) if path is not None else default_rules_path()
    return SqliteRuleStore(where) if create or where.exists() else None

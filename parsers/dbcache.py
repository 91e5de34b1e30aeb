"""Compiled Hyperscan databases kept between runs, in the user's cache folder.

Compiling the 270-odd signatures takes 0.4 s, paid by every `crashcart triage` before it reads a byte; loading
the compiled bytes takes well under a millisecond. A database is filed under a digest of everything it was built
from (the patterns and flags, the Hyperscan version, the machine's architecture), so a changed rule, a confirmed
rule or an upgrade finds no stale entry. Hyperscan checks a serialized database's integrity when it loads it, so
a damaged or foreign file is compiled again and replaced. The cache is a convenience: any error reading or
writing it only means compiling, never a failed run. Every change of the rules files a new database, so the
folder keeps only the KEEP most recently used ones (a load marks its file used).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path

import hyperscan

CACHE_DIR_ENV = "XDG_CACHE_HOME"
KEEP = 16  # databases kept: the rules as shipped, confirmed rules and the structure pass, over a few upgrades


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/crashcart/hyperscan, or ~/.cache/crashcart/hyperscan."""
    root = os.environ.get(CACHE_DIR_ENV) or str(Path.home() / ".cache")
    return Path(root) / "crashcart" / "hyperscan"


def cached_database(recipe: object, build: Callable[[], hyperscan.Database]) -> hyperscan.Database:
    """The database `build` makes from `recipe` (a repr-able description of its patterns and flags), from the
    cache when it holds one, else built and stored."""
    # the binding's version (not in its type stubs; importlib.metadata would cost 40 ms of every start)
    material = repr((getattr(hyperscan, "__version__", ""), platform.machine(), recipe)).encode()
    path = cache_dir() / f"{hashlib.sha256(material).hexdigest()[:40]}.hsdb"
    try:
        db = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
    except (OSError, hyperscan.error):
        pass  # not cached yet, unreadable, or damaged: compile it
    else:
        _mark_used(path)
        return db
    db = build()
    _store(path, bytes(hyperscan.dumpb(db)))
    _prune(path.parent)
    return db


def _mark_used(path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only cache still serves
        os.utime(path)


def _prune(folder: Path) -> None:
    """Remove all but the KEEP most recently used databases."""
    try:
        entries = sorted(folder.glob("*.hsdb"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned first, or the folder is read-only


def _store(path: Path, data: bytes) -> None:
    """Write atomically (a reader never sees half a file); a folder that cannot be written is left alone."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".hsdb")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)

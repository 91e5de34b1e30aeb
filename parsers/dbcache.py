"""Compiled Hyperscan databases kept between runs, in the user's cache folder.

Compiling the 270-odd signatures takes 0.4 s, paid by every `crashcart triage` before it reads a byte; loading
the compiled bytes takes well under a millisecond. A database is filed under a digest of everything it was built
from (the patterns and flags, the Hyperscan version, the machine's architecture), so a changed rule, a confirmed
rule or an upgrade finds no stale entry. Hyperscan checks a serialized database's integrity when it loads it, so
a damaged or foreign file is compiled again and replaced. The cache is a convenience: any error reading or
writing it only means compiling, never a failed run (knowledge/filecache.py). Every change of the rules files a
new database, so the folder keeps only the KEEP most recently used ones (a load marks its file used).
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path

import hyperscan

from crashcart.knowledge import filecache
from crashcart.knowledge.filecache import CACHE_DIR_ENV

__all__ = ["CACHE_DIR_ENV", "KEEP", "cache_dir", "cached_database"]

KEEP = 16  # databases kept: the rules as shipped, confirmed rules and the structure pass, over a few upgrades
KIND = "hyperscan"


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/crashcart/hyperscan, or ~/.cache/crashcart/hyperscan."""
    return filecache.cache_dir(KIND)


def cached_database(recipe: object, build: Callable[[], hyperscan.Database]) -> hyperscan.Database:
    """The database `build` makes from `recipe` (a repr-able description of its patterns and flags), from the
    cache when it holds one, else built and stored."""
    # the binding's version (not in its type stubs; importlib.metadata would cost 40 ms of every start)
    material = repr((getattr(hyperscan, "__version__", ""), platform.machine(), recipe)).encode()
    path = filecache.entry(KIND, material, ".hsdb")
    data = filecache.read(path)
    if data is not None:
        try:
            return hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        except hyperscan.error:
            pass  # damaged or foreign: compile it
    db = build()
    filecache.store(path, bytes(hyperscan.dumpb(db)), KEEP)
    return db

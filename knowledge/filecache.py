"""Files kept between runs in the user's cache folder: what a start would otherwise rebuild every time.

Entries are named by a digest of everything they were made from, so a changed input finds no stale entry and
nothing is ever invalidated by hand. The cache is a convenience: any error reading or writing it only means
rebuilding, never a failed run. Writes are atomic; each folder keeps only its most recently used entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

CACHE_DIR_ENV = "XDG_CACHE_HOME"


def cache_dir(kind: str) -> Path:
    """$XDG_CACHE_HOME/crashcart/<kind>, or ~/.cache/crashcart/<kind>."""
    root = os.environ.get(CACHE_DIR_ENV) or str(Path.home() / ".cache")
    return Path(root) / "crashcart" / kind


def entry(kind: str, material: bytes, suffix: str) -> Path:
    """The cache file for what `material` describes."""
    return cache_dir(kind) / f"{hashlib.sha256(material).hexdigest()[:40]}{suffix}"


def read(path: Path) -> bytes | None:
    """The entry's bytes, marked used; None when there is none or it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    with contextlib.suppress(OSError):  # a read-only cache still serves
        os.utime(path)
    return data


def store(path: Path, data: bytes, keep: int) -> None:
    """Write atomically (a reader never sees half a file), then keep the `keep` most recently used entries of
    the folder; a folder that cannot be written is left alone."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return
    _prune(path.parent, path.suffix, keep)


def _prune(folder: Path, suffix: str, keep: int) -> None:
    try:
        entries = sorted(folder.glob(f"*{suffix}"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[keep:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned first, or the folder is read-only

"""The user's cache folder: entries named by what they were made from, written atomically, pruned by use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crashcart.knowledge import filecache


def test_an_entry_is_named_by_its_material_under_its_kind() -> None:
    one, same, other = (filecache.entry("kind", m, ".bin") for m in (b"a", b"a", b"b"))
    assert one == same != other
    assert one.parent == filecache.cache_dir("kind") and one.suffix == ".bin"


def test_what_is_stored_is_read_back_and_a_missing_entry_is_none() -> None:
    path = filecache.entry("kind", b"material", ".bin")
    assert filecache.read(path) is None
    filecache.store(path, b"\x00data", keep=4)
    assert filecache.read(path) == b"\x00data"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def test_only_the_most_recently_used_entries_are_kept() -> None:
    paths = [filecache.entry("kind", bytes([n]), ".bin") for n in range(3)]
    for n, path in enumerate(paths):
        filecache.store(path, b"x", keep=10)
        os.utime(path, (1000 + n, 1000 + n))  # distinct ages, whatever the clock's grain
    filecache.read(paths[0])  # used again: now the newest
    filecache.store(filecache.entry("kind", b"new", ".bin"), b"x", keep=2)
    assert paths[0].exists() and not paths[1].exists() and not paths[2].exists()


def test_a_cache_that_cannot_be_written_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(filecache.CACHE_DIR_ENV, str(blocker))
    path = filecache.entry("kind", b"m", ".bin")
    filecache.store(path, b"x", keep=2)
    assert filecache.read(path) is None

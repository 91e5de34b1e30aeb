"""Compiled databases between runs: built once, loaded after, rebuilt when damaged, never failing the run."""

from __future__ import annotations

import os
from pathlib import Path

import hyperscan
import pytest

from crashcart.parsers import dbcache
from crashcart.parsers.dbcache import cache_dir, cached_database

# NCCL's watchdog line (pytorch/pytorch#113128's log), one pattern of the kind the rule filter compiles
LINE = b"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=305, OpType=ALLREDUCE) ran for 600032 ms\n"
RECIPE = ((r"Watchdog caught collective operation timeout", hyperscan.HS_FLAG_MULTILINE),)


def build() -> hyperscan.Database:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[RECIPE[0][0].encode()], ids=[0], elements=1, flags=[RECIPE[0][1]])
    built.append(db)
    return db


built: list[hyperscan.Database] = []


def matches(db: hyperscan.Database) -> int:
    found: list[int] = []
    db.scan(LINE, match_event_handler=lambda *a: found.append(a[0]), scratch=hyperscan.Scratch(db))
    return len(found)


@pytest.fixture(autouse=True)
def fresh() -> None:
    built.clear()


def test_a_database_is_built_once_then_loaded_from_the_users_cache() -> None:
    assert matches(cached_database(RECIPE, build)) == 1 and len(built) == 1
    assert str(cache_dir()).startswith(str(Path.home()))  # the test's own HOME (tests/conftest.py)
    assert matches(cached_database(RECIPE, build)) == 1 and len(built) == 1  # loaded, not built


def test_a_damaged_file_is_built_again_and_replaced() -> None:
    cached_database(RECIPE, build)
    (path,) = cache_dir().glob("*.hsdb")
    path.write_bytes(path.read_bytes()[:50])
    assert matches(cached_database(RECIPE, build)) == 1 and len(built) == 2
    assert matches(cached_database(RECIPE, build)) == 1 and len(built) == 2


def test_a_cache_that_cannot_be_written_only_means_building(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(dbcache.CACHE_DIR_ENV, str(blocker))
    assert matches(cached_database(RECIPE, build)) == 1
    assert matches(cached_database(RECIPE, build)) == 1 and len(built) == 2


def test_only_the_most_recently_used_databases_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dbcache, "KEEP", 2)
    recipes = [(*RECIPE, ("variant", n)) for n in range(3)]  # three rule sets: three files
    for n, recipe in enumerate(recipes):
        cached_database(recipe, build)
        for i, path in enumerate(sorted(cache_dir().glob("*.hsdb"), key=lambda p: p.stat().st_mtime)):
            os.utime(path, (1000 + 10 * n + i, 1000 + 10 * n + i))  # distinct ages, whatever the clock's grain
        if n == 0:
            first = next(cache_dir().glob("*.hsdb"))
    cached_database(recipes[0], build)  # built again: it was the least recently used of three, and pruned
    assert len(built) == 4 and len(list(cache_dir().glob("*.hsdb"))) == 2 and first.exists()

"""crashcart/htmlreport/batch.py through `crashcart batch --format html`: the batch page is drawn by a real
Chromium (class bars, infrastructure share, offenders with their drain command, the jobs table) and links to
each job's own page, written beside it; a rerun reuses the pages, and a missing one is made again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from batch_jobs import three_jobs
from chromium import drawn, screenshot

from crashcart.htmlreport.batch import page_name


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_jobs(tmp_path_factory.mktemp("jobs"))


def test_the_batch_page_is_drawn_and_links_each_jobs_page(cli, tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "report" / "batch.html"
    out.parent.mkdir()
    db = str(tmp_path / "b.db")
    code, stdout, err = cli("batch", str(tree), "--results", db, "--workers", "2", "-f", "html", "-o", str(out))
    assert code == 0 and stdout == "", err
    text = out.read_text()
    links = re.findall(r'<a href="(batch-jobs/[^"]+)">([^<]+)</a>', text)
    assert sorted(job for _, job in links) == ["2025-03/a", "2025-03/b", "2025-03/c"]
    for href, job in links:
        assert href == f"batch-jobs/{page_name(job)}" and (out.parent / href).is_file()
    assert "scontrol update NodeName=node05 State=DRAIN" in text

    seen = drawn(
        out,
        ["svg.bars rect.bar", "svg.infra rect.share", "#offenders tbody tr", "#jobs tbody tr", "#jobs a", "#classes"],
    )
    shot = screenshot(out, tmp_path / "batch.png", height=1400)
    print(f"screenshot of the batch report: {shot}")
    assert seen["scripts"] == 0
    assert seen["svg.bars rect.bar"] == 2 * 3  # jobs and GPU-hours for each of the three classes
    assert seen["svg.infra rect.share"] == 4  # infrastructure and the rest, by jobs and by GPU-hours
    assert seen["#offenders tbody tr"] == 1 and seen["#jobs tbody tr"] == 3 and seen["#jobs a"] == 3

    job = out.parent / links[0][0]
    page = drawn(job, ["svg.timeline g.lane", "svg.timeline .root_cause", "svg.heatmap rect.cell", "a"])
    assert page["svg.timeline g.lane"] >= 1 and page["svg.timeline .root_cause"] >= 1 and page["a"] == 1
    assert 'href="../batch.html"' in job.read_text()  # back to the batch page


def test_a_rerun_reuses_the_pages_and_makes_a_missing_one_again(cli, tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch.html"
    db = str(tmp_path / "b.db")
    assert cli("batch", str(tree), "--results", db, "-f", "html", "-o", str(out))[0] == 0
    code, _, err = cli("batch", str(tree), "--results", db, "-f", "html", "-o", str(out))
    assert code == 0 and "0 new, 3 unchanged" in err
    (tmp_path / "batch-jobs" / page_name("2025-03/b")).unlink()
    code, _, err = cli("batch", str(tree), "--results", db, "-f", "html", "-o", str(out))
    assert code == 0 and "1 new, 2 unchanged" in err
    assert (tmp_path / "batch-jobs" / page_name("2025-03/b")).is_file()


def test_on_stdout_the_page_says_how_to_get_the_jobs_pages(cli, tree: Path, tmp_path: Path) -> None:
    code, out, _ = cli("batch", str(tree), "--results", str(tmp_path / "b.db"), "-f", "html")
    assert code == 0 and out.startswith("<!DOCTYPE html>")
    assert "<a href=" not in out and "Written with -o" in out


def test_page_names_are_one_safe_file_each() -> None:
    names = {page_name(j) for j in ("a/b", "a_b", "a b", "../../etc/passwd", "")}
    assert len(names) == 5
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.html", n) and not n.startswith(".") for n in names)

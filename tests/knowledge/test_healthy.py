"""Tests for knowledge/healthy.py: the healthy corpus is data files with a manifest of where they come from."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from crashcart.knowledge import healthy
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.healthy import HEALTHY_DIR, SOURCES, healthy_corpus, load_sources

REPO = Path(__file__).resolve().parents[2]
SAMPLES = [
    "deepspeed.log",
    "hf_trainer.log",
    "kernel.log",
    "megatron.log",
    "nccl.log",
    "slurm.log",
    "torchrun.log",
    "generated_per_node.log",
    "generated_slurm.log",
]
CAPTURED = SAMPLES[:7]  # copied from public threads and pages; the last two are the eval generator's output


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A copy of the shipped folder that healthy_corpus() reads instead of the real one."""
    copy = tmp_path / "healthy"
    shutil.copytree(HEALTHY_DIR, copy)
    healthy._healthy.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(healthy, "HEALTHY_DIR", copy)
        yield copy
    healthy._healthy.cache_clear()


def test_every_log_file_is_in_the_manifest_and_every_entry_exists() -> None:
    listed = [s.file for s in load_sources(HEALTHY_DIR).samples]
    assert sorted(listed) == sorted(p.name for p in HEALTHY_DIR.glob("*.log"))
    assert listed == SAMPLES  # the corpus reads them in this order; the first healthy match reported follows it
    assert all(s.printed_by and s.origin for s in load_sources(HEALTHY_DIR).samples)


def test_every_captured_file_names_the_threads_its_lines_were_copied_from() -> None:
    samples = {s.file: s for s in load_sources(HEALTHY_DIR).samples}
    assert all(len(samples[name].sources) >= 5 for name in CAPTURED), {n: samples[n].sources for n in CAPTURED}
    assert all(samples[name].sources == [] for name in SAMPLES if name not in CAPTURED)  # generated, no thread
    assert "NVIDIA/nccl#1231" in samples["nccl.log"].sources  # the maintainer who calls plugin-not-found harmless


def test_the_corpus_is_every_distinct_line_of_the_samples() -> None:
    lines = healthy_corpus()
    assert len(lines) == len(set(lines)) >= 1968  # 2,108 when the generated job became data; 1,968 once its
    # iteration timers were cut to the two a real default run prints (forward-backward, optimizer)
    expected = {ln for name in SAMPLES for ln in (HEALTHY_DIR / name).read_text(encoding="utf-8").splitlines()}
    assert set(lines) == expected - {""}
    assert any(line.startswith("[default1]:") and " iteration " in line for line in lines)  # torchrun, per node
    assert any(line.startswith("0: ") for line in lines)  # srun --label


def test_a_missing_manifest_names_the_fix(folder: Path) -> None:
    (folder / SOURCES).unlink()
    with pytest.raises(
        KnowledgeError,
        match=r"no healthy log samples in .*healthy \(no sources\.yaml\): reinstall "
        r"crashcart with its package data \(knowledge/healthy/\*\.log and "
        r"sources\.yaml\)",
    ):
        healthy_corpus()


def test_a_listed_file_that_is_missing_names_the_fix(folder: Path) -> None:
    (folder / "nccl.log").unlink()
    with pytest.raises(
        KnowledgeError,
        match=r"sources\.yaml lists nccl\.log, not in .*: reinstall crashcart with "
        r"its package data, or remove the entry",
    ):
        healthy_corpus()


def test_an_unlisted_log_file_names_the_fix(folder: Path) -> None:
    (folder / "extra.log").write_text("NCCL version 2.21.5+cuda12.4\n", encoding="utf-8")
    with pytest.raises(
        KnowledgeError,
        match=r"extra\.log in .* not in .*sources\.yaml: add an entry saying which "
        r"program prints its lines and where they come from",
    ):
        healthy_corpus()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("version: 1", "version: 2"), r"has version 2; expected 1"),
        (lambda t: t.replace("    origin:", "    source:", 1), r"samples\.0\.origin: Field required"),
        (lambda t: t.replace("file: kernel.log", "file: nccl.log"), r"a file is listed twice: \['nccl\.log'\]"),
        (lambda t: t.replace("file: kernel.log", "file: kernel.txt"), r"samples\.2\.file: String should match"),
        (lambda t: t.replace("- NVIDIA/nccl#352", "- nccl issue 352"), r"samples\.4\.sources\.0: String should match"),
        (
            lambda t: t.replace("- NVIDIA/nccl#1126", "- NVIDIA/nccl#352"),
            r"nccl\.log lists a source twice: \['NVIDIA/nccl#352'\]",
        ),
    ],
    ids=["version", "field", "twice", "not-a-log", "not-a-source", "source-twice"],
)
def test_an_invalid_manifest_names_the_file(folder: Path, edit, message: str) -> None:
    manifest = folder / SOURCES
    manifest.write_text(edit(manifest.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(KnowledgeError, match=rf"healthy-corpus manifest .*sources\.yaml.*{message}"):
        healthy_corpus()

"""What a Slack user asks → log files, safely: parsing, the log roots, paste and upload limits, download hosts."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.slack_api import BOT_TOKEN
from slack_sdk import WebClient

from crashcart.bot.requests import (
    JobAsk,
    PasteAsk,
    PathAsk,
    UploadAsk,
    allowed_url,
    download,
    parse_ask,
    safe_path,
    write_paste,
)
from crashcart.knowledge.errors import InputError


@pytest.mark.parametrize(
    ("text", "ask"),
    [
        ("<@UCRASHBOT> 123456", JobAsk(job_id="123456")),
        ("<@UCRASHBOT|crashcart>   job 4242_3", JobAsk(job_id="4242_3")),
        ("slurm job id: 77", JobAsk(job_id="77")),
        ("`9001+1`", JobAsk(job_id="9001+1")),
        ("<@UCRASHBOT> /data/logs/job1", PathAsk(path="/data/logs/job1")),
        ("`/data/my logs/x`", PathAsk(path="/data/my logs/x")),
        ("rank3.log", PathAsk(path="rank3.log")),
        ("../../etc/shadow", PathAsk(path="../../etc/shadow")),
        ("look: ```a &lt;b&gt; &amp;\nNCCL error```", PasteAsk(text="a <b> &\nNCCL error")),
        ("```one``` and ```two```", PasteAsk(text="one\ntwo")),
        ("line one\nsee <https://wiki.example.com/x|the wiki>", PasteAsk(text="line one\nsee the wiki")),
        ("why did job 4242 fail?", JobAsk(job_id="4242")),
        ("hey <@UCRASHBOT> what about `/scratch/run1/`?", PathAsk(path="/scratch/run1/")),
        ("look at /scratch/run1.", PathAsk(path="/scratch/run1")),
        ("compare 4242 with /scratch/run1", None),  # two asks in one: say how to ask instead
        ("step 100 failed", None),
        ("hello", None),
        ("why did my job die?", None),
        ("<@UCRASHBOT>", None),
        ("", None),
    ],
)
def test_parse_ask(text: str, ask) -> None:
    assert parse_ask(text) == ask


def test_files_win_over_text() -> None:
    assert parse_ask("12345", ["F1", "F2"]) == UploadAsk(file_ids=["F1", "F2"])


@pytest.fixture()
def roots(tmp_path: Path) -> list[Path]:
    a, b, outside = tmp_path / "a", tmp_path / "b", tmp_path / "outside"
    for d in (a, b, outside):
        d.mkdir()
    (a / "job.log").write_text("x\n")
    (b / "only-b.log").write_text("x\n")
    (outside / "secret.log").write_text("x\n")
    (a / "to-b.log").symlink_to(b / "only-b.log")  # a link from one root into another is fine
    return [a, b]


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        ("job.log", "a/job.log"),
        ("only-b.log", "b/only-b.log"),  # relative: tried under each root
        ("to-b.log", "b/only-b.log"),
        ("{a}/job.log", "a/job.log"),
        ("{a}/../a/job.log", "a/job.log"),
        ("{a}", "a"),
    ],
)
def test_safe_path_inside_the_roots(roots: list[Path], tmp_path: Path, raw: str, found: str) -> None:
    assert safe_path(raw.format(a=roots[0]), roots) == (tmp_path / found).resolve()


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("/etc/shadow", "/etc/shadow is outside the log roots crashcart may read"),
        ("../outside/secret.log", "is outside the log roots"),
        ("{a}/../outside/secret.log", "is outside the log roots"),
        ("~/secret.log", "give an absolute path under the log roots"),
        ("job\0.log", "give an absolute path under the log roots"),
        ("missing.log", "no such file or folder under the log roots: missing.log"),
    ],
)
def test_safe_path_refusals(roots: list[Path], raw: str, said: str) -> None:
    with pytest.raises(InputError, match=said.replace(".", r"\.")):
        safe_path(raw.format(a=roots[0]), roots)


def test_a_symlink_out_of_the_roots_is_refused_directly_and_inside_a_folder(roots: list[Path], tmp_path: Path) -> None:
    (roots[0] / "out.log").symlink_to(tmp_path / "outside" / "secret.log")
    with pytest.raises(InputError, match="out.log is outside the log roots"):
        safe_path("out.log", roots)
    with pytest.raises(InputError, match=r"holds a symlink out of the log roots \(out.log\)"):
        safe_path(str(roots[0]), roots)


def test_no_roots_means_no_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no log_roots in the bot config"):
        safe_path(str(tmp_path), [])


def test_paste_limit(tmp_path: Path) -> None:
    assert write_paste("é" * 5, 10, tmp_path).read_text() == "é" * 5  # 10 bytes: at the limit
    with pytest.raises(InputError, match=r"is 12 bytes, over the bot's limit of 10 \(max_paste_bytes\)"):
        write_paste("é" * 6, 10, tmp_path)
    with pytest.raises(InputError, match="the pasted text is empty"):
        write_paste(" \n", 10, tmp_path)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://files.slack.com/files-pri/T1-F1/x.log", True),
        ("https://slack.com/files-pri/T1-F1/x.log", True),
        ("https://evil.example.com/x.log", False),
        ("https://slack.com.evil.example.com/x.log", False),
        ("https://notslack.com/x.log", False),
        ("http://files.slack.com/x.log", False),  # no downgrade to plain HTTP
        ("https://files.slack.com:8443/x.log", False),
        ("file:///etc/shadow", False),
        ("", False),
    ],
)
def test_downloads_only_from_the_api_host(url: str, ok: bool) -> None:
    assert allowed_url(url, "https://slack.com/api/") is ok


def test_download_follows_redirects_only_to_the_api_host(slack_api, tmp_path: Path) -> None:
    client = WebClient(token=BOT_TOKEN, base_url=slack_api.base_url)
    slack_api.add_file("F1", "a.log", b"line\n")
    slack_api.add_file("F2", "b.log", b"", redirect="{root}/files-pri/T0TEST-F1/a.log")
    slack_api.add_file("F3", "c.log", b"", redirect="http://files.example.com/c.log")
    assert download(client, "F2", tmp_path, 100, set()).read_bytes() == b"line\n"
    with pytest.raises(InputError, match="Slack redirected the download to files.example.com"):
        download(client, "F3", tmp_path, 100, set())


def test_download_limits_and_slack_errors(slack_api, tmp_path: Path) -> None:
    client = WebClient(token=BOT_TOKEN, base_url=slack_api.base_url)
    slack_api.add_file("F1", "../../evil name.log", b"x" * 500, size=10)  # files.info understates the size
    with pytest.raises(InputError, match="evil name.log is over the bot's upload limit of 100 bytes"):
        download(client, "F1", tmp_path, 100, set())
    with pytest.raises(InputError, match=r"Slack refused files.info for F9 \(file_not_found\)"):
        download(client, "F9", tmp_path, 100, set())
    slack_api.add_file("F2", "../../evil name.log", b"ok\n")
    assert download(client, "F2", tmp_path, 100, set()) == tmp_path / "evil_name.log"  # no way out of tmp_path
    wrong = WebClient(token="xoxb-wrong", base_url=slack_api.base_url)
    slack_api.files["F3"] = slack_api.files["F2"]
    from crashcart.bot.requests import _fetch

    with pytest.raises(InputError, match="Slack sent a web page instead of c.log: the bot token needs the files:read"):
        _fetch(wrong, f"{slack_api.root}/files-pri/T0TEST-F3/c.log", tmp_path / "c.log", 100, "c.log")

"""What a Slack user asked about (a Slurm job, a path, a paste, an upload) and the log files it safely comes to.

Everything here treats the ask as hostile: paths and Slurm jobs are read only under the configured log roots
(after resolving symlinks and `..`), pastes and uploads are size-limited, and uploads are downloaded only from
the Slack API host the bot's client talks to. Each refusal is an InputError whose message is the one-line reply.
"""

from __future__ import annotations

import http.client
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from crashcart.bot.config import BotConfig
from crashcart.knowledge.errors import CrashcartError, InputError
from crashcart.knowledge.records import Strict

MAX_FILES = 10
CHUNK = 1 << 20

_MENTIONS = re.compile(r"^\s*(?:<@[A-Z0-9]+(?:\|[^>]*)?>\s*)+")
_ANY_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_LINK = re.compile(r"<((?:https?|mailto):[^|>\s]+)(?:\|([^>]*))?>")
_CODE_BLOCK = re.compile(r"```(.*?)```", re.DOTALL)
_JOB = re.compile(r"^(?:(?:slurm\s+)?job(?:\s*id)?\s*[:#=]?\s*)?(\d+(?:[_+]\d+)?)$", re.IGNORECASE)
_SENTENCE_JOB = re.compile(r"^\d{4,}(?:[_+]\d+)?$")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_PATHLIKE = re.compile(r"^\S*/\S*$|^\S+\.[A-Za-z0-9]{1,8}$")  # a slash, or a file name with an extension

HELP = (
    "ask me about a failed job with a Slurm job id (`123456`), a log path under the log roots, "
    "a log excerpt in a ``` code block, or an uploaded log file"
)


class JobAsk(Strict):
    kind: Literal["job"] = "job"
    job_id: str


class PathAsk(Strict):
    kind: Literal["path"] = "path"
    path: str


class PasteAsk(Strict):
    kind: Literal["paste"] = "paste"
    text: str


class UploadAsk(Strict):
    kind: Literal["upload"] = "upload"
    file_ids: list[str] = Field(min_length=1)


TriageRequest = Annotated[JobAsk | PathAsk | PasteAsk | UploadAsk, Field(discriminator="kind")]


class Logs(Strict):
    """The files to triage and the name the job goes by in incident memory."""

    paths: list[Path]
    job: str


def unescape(text: str) -> str:
    """Slack's message text back to what the user typed: links unwrapped, &lt; &gt; &amp; decoded."""
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def parse_ask(text: str, file_ids: Sequence[str] = ()) -> TriageRequest | None:
    """The ask in a mention, DM or /crashcart text; None when it is none of the four (the caller shows HELP).

    Files win; then code blocks and multi-line text are pastes; a lone number is a Slurm job; a lone token with a
    slash or a file extension (or a backticked line starting with / or .) is a path; else a sentence naming
    exactly one job id or one path.
    """
    if file_ids:
        return UploadAsk(file_ids=list(file_ids)[:MAX_FILES])
    body = _MENTIONS.sub("", text or "").strip()
    blocks = _CODE_BLOCK.findall(body)
    if blocks:
        return PasteAsk(text=unescape("\n".join(b.strip("\n") for b in blocks)))
    if "\n" in body:
        return PasteAsk(text=unescape(body))
    body = unescape(_ANY_MENTION.sub(" ", body)).strip()
    quoted = body.startswith("`") and body.endswith("`") and len(body) > 1
    token = body.strip("`").strip()
    if job := _JOB.match(token):
        return JobAsk(job_id=job.group(1))
    if _PATHLIKE.match(token) or (quoted and token[:1] in ("/", ".", "~")):
        return PathAsk(path=token)
    return _in_sentence(token)


def _in_sentence(line: str) -> JobAsk | PathAsk | None:
    """One job id (4+ digits) or one path in a sentence: "why did job 4242 fail?", "look at /scratch/run1"."""
    words = [w.strip("`'\"()[]{}<>,;:?!") for w in line.split()]
    jobs = [w for w in words if _SENTENCE_JOB.match(w)]
    paths = [w.rstrip(".") for w in words if "/" in w]
    if len(jobs) == 1 and not paths:
        return JobAsk(job_id=jobs[0])
    if len(paths) == 1 and not jobs:
        return PathAsk(path=paths[0])
    return None


def describe_ask(ask: TriageRequest) -> str:
    """How the ask is named in replies (before escaping)."""
    if isinstance(ask, JobAsk):
        return f"Slurm job {ask.job_id}"
    if isinstance(ask, PathAsk):
        return ask.path
    if isinstance(ask, PasteAsk):
        return f"a pasted excerpt ({len(ask.text.splitlines())} lines)"
    return f"{len(ask.file_ids)} uploaded file(s)"


# -- paths and Slurm jobs: only under the log roots ----------------------------------------------------------


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in roots)


def safe_path(raw: str, roots: Sequence[Path]) -> Path:
    """The resolved path if it (and every symlink below it) stays under a log root; InputError otherwise."""
    if not roots:
        raise InputError("reading paths is off: no log_roots in the bot config; add the folders the bot may read")
    if raw.startswith("~") or "\0" in raw:
        raise InputError(f"{raw}: give an absolute path under the log roots or one relative to them")
    given = Path(raw)
    candidates = [given] if given.is_absolute() else [root / given for root in roots]
    try:
        inside = [c.resolve() for c in candidates if _inside(c, roots)]
        escapes = any(c.exists() and not _inside(c, roots) for c in candidates)
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable component
        raise InputError(f"{raw}: cannot resolve ({exc}); give another path") from exc
    found = next((p for p in inside if p.exists()), None)
    if found is None and (escapes or not inside):
        raise InputError(f"{raw} is outside the log roots crashcart may read ({', '.join(map(str, roots))})")
    if found is None:
        raise InputError(f"no such file or folder under the log roots: {raw}")
    _check_links(found, roots, raw)
    return found


def _check_links(path: Path, roots: Sequence[Path], raw: str) -> None:
    """Refuse a folder with a symlink that leads out of the roots: triage would follow it."""
    if not path.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(path):
        for name in (*dirnames, *filenames):
            entry = Path(dirpath) / name
            if entry.is_symlink() and not _inside(entry, roots):
                raise InputError(
                    f"{raw} holds a symlink out of the log roots ({entry.relative_to(path)}); "
                    "ask about the files themselves"
                )


def job_logs(job_id: str, roots: Sequence[Path]) -> list[Path]:
    """The Slurm job's log files (crashcart.batch.slurm), each checked to lie under the log roots."""
    from crashcart.batch.slurm import slurm_job_logs  # lazy: only a job-id question needs sacct

    try:
        paths = slurm_job_logs(job_id)
    except CrashcartError:
        raise
    except Exception as exc:  # sacct missing, a timeout, a parse error: the one-line reply says which
        raise InputError(
            f"could not find the logs of Slurm job {job_id} ({type(exc).__name__}: {exc}); "
            "give the job's log path instead"
        ) from exc
    if not paths:
        raise InputError(f"Slurm job {job_id} has no log files that the bot can find; give the log path instead")
    return [safe_path(str(p), roots) for p in paths]


# -- pastes and uploads ----------------------------------------------------------------------------------------


def write_paste(text: str, limit: int, workdir: Path) -> Path:
    """The pasted text as workdir/paste.log, refused over `limit` bytes."""
    data = text.encode("utf-8")
    if len(data) > limit:
        raise InputError(
            f"the pasted text is {len(data):,} bytes, over the bot's limit of {limit:,} "
            "(max_paste_bytes): upload the log as a file or give its path"
        )
    if not data.strip():
        raise InputError("the pasted text is empty: paste the log lines inside a ``` code block")
    path = workdir / "paste.log"
    path.write_bytes(data)
    return path


def allowed_url(url: str, api_base: str) -> bool:
    """Same scheme and port as the Slack API base URL, and its host or a subdomain (files.slack.com)."""
    got, api = urlsplit(url), urlsplit(api_base)
    try:
        same_port = (got.port or 0) == (api.port or 0)
    except ValueError:
        return False
    host, api_host = (got.hostname or "").lower(), (api.hostname or "").lower()
    return got.scheme == api.scheme and same_port and bool(host) and (host == api_host or host.endswith("." + api_host))


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to an allowed host: the request carries the bot token."""

    def __init__(self, api_base: str) -> None:
        self.api_base = api_base

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        if not allowed_url(newurl, self.api_base):
            raise InputError(
                f"Slack redirected the download to {urlsplit(newurl).hostname}, which the bot does not download from"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _safe_name(name: str, taken: set[str]) -> str:
    safe = _UNSAFE_NAME.sub("_", Path(name).name).lstrip(".") or "upload.log"
    while safe in taken:
        safe = "_" + safe
    taken.add(safe)
    return safe


def download(client: WebClient, file_id: str, dest_dir: Path, limit: int, taken: set[str]) -> Path:
    """One uploaded file into dest_dir, via files.info; refused over `limit` bytes or from another host."""
    try:
        info = client.files_info(file=file_id)["file"]
    except SlackApiError as exc:
        raise InputError(
            f"Slack refused files.info for {file_id} ({exc.response.get('error')}): the bot needs the files:read scope"
        ) from exc
    name, size = str(info.get("name") or file_id), int(info.get("size") or 0)
    if size > limit:
        raise InputError(
            f"{name} is {size:,} bytes, over the bot's upload limit of {limit:,} (max_upload_bytes): "
            "give its path under the log roots instead"
        )
    url = info.get("url_private_download") or info.get("url_private") or ""
    if not allowed_url(url, client.base_url):
        raise InputError(
            f"{name}: the bot downloads only from {urlsplit(client.base_url).hostname}, "
            f"not {urlsplit(url).hostname or 'an empty URL'}"
        )
    dest = dest_dir / _safe_name(name, taken)
    _fetch(client, url, dest, limit, name)
    return dest


def _fetch(client: WebClient, url: str, dest: Path, limit: int, name: str) -> None:
    proxy = urllib.request.ProxyHandler({"http": client.proxy, "https": client.proxy} if client.proxy else None)
    opener = urllib.request.build_opener(
        proxy, urllib.request.HTTPSHandler(context=client.ssl), _SameHostRedirects(client.base_url)
    )
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {client.token}"})
    try:
        with opener.open(request, timeout=client.timeout) as resp, dest.open("wb") as out:
            if resp.headers.get_content_type() == "text/html":
                raise InputError(f"Slack sent a web page instead of {name}: the bot token needs the files:read scope")
            total = 0
            while chunk := resp.read(CHUNK):
                total += len(chunk)
                if total > limit:
                    raise InputError(f"{name} is over the bot's upload limit of {limit:,} bytes (max_upload_bytes)")
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise InputError(
            f"downloading {name} from Slack failed (HTTP {exc.code}); check the bot token's files:read scope"
        ) from exc
    except urllib.error.URLError as exc:
        raise InputError(f"downloading {name} from Slack failed ({exc.reason}); try again") from exc
    except (OSError, ValueError, http.client.HTTPException) as exc:  # a bad URL, a dropped connection
        raise InputError(f"downloading {name} from Slack failed ({type(exc).__name__}: {exc}); try again") from exc


def gather(ask: TriageRequest, config: BotConfig, client: WebClient, workdir: Path) -> Logs:
    """The log files behind an ask (pastes and uploads are written into workdir) and the job's name."""
    if isinstance(ask, JobAsk):
        return Logs(paths=job_logs(ask.job_id, config.log_roots), job=f"slurm:{ask.job_id}")
    if isinstance(ask, PathAsk):
        path = safe_path(ask.path, config.log_roots)
        return Logs(paths=[path], job=str(path))
    if isinstance(ask, PasteAsk):
        return Logs(paths=[write_paste(ask.text, config.max_paste_bytes, workdir)], job="slack paste")
    uploads = workdir / "uploads"
    uploads.mkdir()
    taken: set[str] = set()
    files = [download(client, fid, uploads, config.max_upload_bytes, taken) for fid in ask.file_ids]
    return Logs(paths=files if len(files) == 1 else [uploads], job="slack upload: " + ", ".join(sorted(taken)))

"""Stub `sacct` / `scontrol` executables that replay recorded output, so the real crashcart.batch.slurm runs.

`SlurmStubs(bin_dir, monkeypatch)` puts bin_dir first on PATH; `stub("sacct", reply)` writes an executable
there. A reply is text for stdout, a Reply(stdout, stderr, code), or a recording in the `exit N` + stderr form
of tests/slurm/recorded/sacct_error.txt (`Reply.recorded`). Several replies can be routed on the arguments:
`stub("sacct", {"--batch-script": script, "--jobs 13": other, "": rest})` answers with the first entry whose
words all appear in argv ("" matches anything). Every call's arguments are recorded: `calls("sacct")`.

`recorded(name, root)` is a file of tests/slurm/recorded with the recording cluster's folder moved to `root`,
so the log paths it names are files the test creates.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

RECORDED = Path(__file__).resolve().parents[2] / "slurm" / "recorded"
RECORDED_ROOT = "/tmp/pytest-of-root/pytest-226/slurm0"  # where the recording cluster lived

_SCRIPT = """#!{python} -I
import json, sys
argv = sys.argv[1:]
with open({calls!r}, "a") as out:
    out.write(json.dumps(argv) + "\\n")
with open({replies!r}) as f:
    replies = json.load(f)
for words, reply in replies:
    if all(word in argv for word in words.split()):
        sys.stdout.write(reply["stdout"])
        sys.stderr.write(reply["stderr"])
        sys.exit(reply["code"])
sys.exit("stub {name}: no reply for " + " ".join(argv))
"""


@dataclass(frozen=True)
class Reply:
    stdout: str = ""
    stderr: str = ""
    code: int = 0

    @classmethod
    def recorded(cls, text: str) -> Reply:
        """`exit 1` on the first line, then what the command printed on stderr."""
        status, _, stderr = text.partition("\n")
        return cls(stderr=stderr, code=int(status.split()[1]))


def recorded(name: str, root: Path | None = None) -> str:
    text = (RECORDED / name).read_text()
    return text.replace(RECORDED_ROOT, str(root)) if root is not None else text


class SlurmStubs:
    def __init__(self, bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = bin_dir
        self.bin.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")

    def stub(self, name: str, replies: str | Reply | dict[str, str | Reply]) -> Path:
        """Write (or rewrite) bin/name answering with `replies`; its recorded calls start over."""
        routes = replies if isinstance(replies, dict) else {"": replies}
        table = [(words, asdict(r if isinstance(r, Reply) else Reply(stdout=r))) for words, r in routes.items()]
        (self.bin / f"{name}.json").write_text(json.dumps(table))
        (self.bin / f"{name}.calls").write_text("")
        path = self.bin / name
        path.write_text(
            _SCRIPT.format(
                python=sys.executable,
                name=name,
                calls=str(self.bin / f"{name}.calls"),
                replies=str(self.bin / f"{name}.json"),
            )
        )
        path.chmod(0o755)
        return path

    def calls(self, name: str) -> list[list[str]]:
        """The arguments of every call of `name` since it was (re)stubbed, in order."""
        log = self.bin / f"{name}.calls"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

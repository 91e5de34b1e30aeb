"""Where a finished Slurm job wrote its output: from its comment, `scontrol`, or its sbatch options.

Why three sources: sacct in 22.05 has no StdOut/StdErr column. `scontrol show job` knows the paths only while
the job is within MinJobAge (minutes); a site may store them in `--comment`; otherwise they follow from the
sbatch options (command line, then `#SBATCH` lines in the stored script) and Slurm's filename patterns,
which is what sbatch itself does. Behaviour of the patterns was measured on Slurm 22.05.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from crashcart.batch.sacct import SacctRow
from crashcart.parsers.numbers import small_int

# Short sbatch options that take a value (`-J name`, `-Jname`); the others are flags.
_SHORT_WITH_VALUE = set("AabcDdeFGiJLMmNnopqStwxCB")
# Long sbatch options that take no value unless written `--opt=value`; every other long option takes one.
_LONG_FLAGS = {
    "contiguous",
    "exclusive",
    "get-user-env",
    "help",
    "hold",
    "ignore-pbs",
    "no-kill",
    "no-requeue",
    "overcommit",
    "oversubscribe",
    "parsable",
    "quiet",
    "reboot",
    "requeue",
    "spread-job",
    "test-only",
    "usage",
    "use-min-nodes",
    "verbose",
    "version",
    "wait",
    "nice",
    "propagate",
    "kill-on-invalid-dep",
}
_NAMES = {"o": "output", "e": "error"}
_PATTERN = re.compile(r"%(\d*)([%AabJjNnstux])")
_NUMERIC = set("AabJjnt")
_MAX_PAD = 10  # sbatch pads to 10 digits at most, whatever the pattern asks (its man page, filename pattern)


def expand_pattern(pattern: str, row: SacctRow, only: str | None = None) -> str:
    """Expand sbatch filename patterns (%j %J %A %a %b %N %n %s %t %u %x %%) the way the batch step does.

    `only` limits expansion to those letters (scontrol already expanded the rest). A pattern holding a
    backslash is taken literally, as sbatch does.
    """
    if "\\" in pattern:
        return pattern.replace("\\", "")
    nodes = row.nodes
    node = nodes[0] if nodes else ""
    values = {
        "%": "%",
        "A": row.array_job_id,
        "a": row.array_task_id,
        "J": row.job_id_raw or row.job_id,
        "j": row.job_id_raw or row.job_id,
        "N": node,
        "n": "0",
        "s": "batch",
        "t": "0",
        "u": row.user,
        "x": row.name,
    }
    task = small_int(values["a"])
    values["b"] = str(task % 10) if task is not None else values["a"]

    def one(match: re.Match[str]) -> str:
        width, letter = match.group(1), match.group(2)
        if only is not None and letter not in only:
            return match.group(0)
        value = values[letter]
        if not width or letter not in _NUMERIC:
            return value
        pad = small_int(width)
        return value.zfill(_MAX_PAD if pad is None else min(pad, _MAX_PAD))

    return _PATTERN.sub(one, pattern)


def sbatch_options(tokens: list[str]) -> dict[str, str]:
    """`output` / `error` from sbatch arguments, stopping at the script name (its own arguments are not ours)."""
    found: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--" or not tok.startswith("-") or tok == "-":
            break
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            if not eq and name not in _LONG_FLAGS and i + 1 < len(tokens):
                i, value = i + 1, tokens[i + 1]
        else:
            name, value = tok[1], tok[2:]
            if name not in _SHORT_WITH_VALUE:
                i += 1
                continue
            if not value and i + 1 < len(tokens):
                i, value = i + 1, tokens[i + 1]
            name = _NAMES.get(name, name)
        if name in ("output", "error"):
            found[name] = value
        i += 1
    return found


def submit_line_options(submit_line: str) -> dict[str, str] | None:
    """Options of an sbatch SubmitLine; None when the job came from srun/salloc (its output went to a terminal).

    sacct stores the line with the shell's quotes gone, so it is split on whitespace, not with shlex.
    """
    tokens = submit_line.split()
    if not tokens or Path(tokens[0]).name != "sbatch":
        return None
    return sbatch_options(tokens[1:])


def script_options(script: str) -> dict[str, str]:
    """Options from `#SBATCH` lines, which sbatch reads until the first command."""
    tokens: list[str] = []
    for line in script.splitlines()[1:] if script.startswith("#!") else script.splitlines():
        stripped = line.strip()
        if stripped.startswith("#SBATCH"):
            tokens += stripped[len("#SBATCH") :].split("#")[0].split()
        elif stripped and not stripped.startswith("#"):
            break
    return sbatch_options(tokens)


def derived_paths(row: SacctRow, script: str = "") -> list[Path]:
    """stdout then stderr as sbatch would name them; [] when the job was not an sbatch job."""
    line_opts = submit_line_options(row.submit_line)
    if line_opts is None:
        return []
    opts = {**script_options(script), **line_opts}  # the command line wins over #SBATCH
    default = "slurm-%A_%a.out" if "_" in row.job_id else "slurm-%j.out"
    patterns = [opts.get("output", default)]
    if "error" in opts:
        patterns.append(opts["error"])
    return _resolve((expand_pattern(p, row) for p in patterns), row.work_dir)


def comment_paths(comment: str) -> list[Path]:
    """Absolute paths in a job comment: `/logs/run1`, `log=/x/out.log`, several split by spaces , or ;."""
    paths = []
    for token in re.split(r"[\s,;]+", comment):
        value = token.split("=", 1)[1] if "=" in token else token
        if value.startswith("/"):
            paths.append(Path(value))
    return paths


def scontrol_paths(fields: dict[str, str], row: SacctRow) -> list[Path]:
    """StdOut/StdErr from `scontrol show job`; 22.05 leaves %N (and step letters) unexpanded there."""
    patterns = [fields[key] for key in ("StdOut", "StdErr") if fields.get(key)]
    return _resolve((expand_pattern(p, row, only="Nnst") for p in patterns), fields.get("WorkDir", row.work_dir))


def _resolve(paths: Iterable[str], work_dir: str) -> list[Path]:
    """Absolute, de-duplicated, /dev/* dropped (`-o /dev/null` means no log)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_absolute():
            if not work_dir:
                continue
            path = Path(work_dir) / path
        if path.parts[1:2] != ("dev",) and path not in out:
            out.append(path)
    return out


def existing(paths: Iterable[Path]) -> list[Path]:
    return [p for p in paths if p.exists()]

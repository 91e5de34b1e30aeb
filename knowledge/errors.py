"""crashcart's domain errors: the one place they live. Only the CLI turns them into an exit."""

from __future__ import annotations


class CrashcartError(Exception):
    """Base of every error crashcart reports to a user as one line (the message names the fix)."""

    exit_code = 2


class InputError(CrashcartError):
    """A path the user gave cannot be read as logs: missing, unreadable, binary, corrupt, empty folder."""


class KnowledgeError(CrashcartError):
    """A shipped or user-supplied knowledge file (rules, runbooks, XID table) is invalid."""


class EvalSetError(CrashcartError):
    """An evaluation set (labels.jsonl and its cases) is missing or malformed."""


class ReadError(InputError):
    """A log stopped being readable part-way (truncated, corrupt, over a size cap): the lines before still count.

    It keeps the file and the reason apart, so that a report can list the file with why it was not read to the end.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)  # both in args: the error survives a trip through a process pool
        self.path, self.reason = path, reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

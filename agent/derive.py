"""The no-LLM proposer: a regex built from the Drain3 template of an evidence line.

The template already says which parts of the line vary (<NUM>, <HEX>, <IP>, <PATH>, <HOST>, <RANK> from
parsers/masking.py, <*> where Drain3 saw different words); each becomes a bounded class, the rest is literal.
The launcher/timestamp prefix (host, pid, [rank], date, log level, source file:line) is dropped, so the rule
matches the same message on any rank and any node, not only the line it was made from.
"""

from __future__ import annotations

import re

import re2

from crashcart.knowledge.errors import KnowledgeError
from crashcart.parsers.attribution import strip_prefixes
from crashcart.parsers.masking import mask

NUM = r"[-+]?\d[\d.,]*(?:[eE][-+]?\d+)?(?:%|[KMG]i?B|m?s)?"  # what masking.py's NUM takes, units too
HEX = r"(?:0x)?[0-9a-fA-F]+"
IP = r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+|<\d+>)?"
TOKEN = r"[^ \t\n]+"  # one whitespace-free word, as Drain3 splits them
RANK = r"[ =:]{0,4}\d+"  # " <RANK>" swallowed the separator: rank3, rank 3, rank=3, local_rank: 3
SPACE = r"[ \t]+"
PCI = r"[0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+(?:[.,]\d+)?"  # 0000:3b:00.0 (also takes a clock time)
CLASSES = {
    "<NUM>": NUM,
    "<HEX>": HEX,
    "<IP>": IP,
    "<PATH>": TOKEN,
    "<HOST>": r"[\w.-]+",
    "<*>": TOKEN,
    "<RANK>": RANK,
    "<PCI>": PCI,
}
MIN_CORE_LETTERS = 8  # a message part shorter than this keeps some of its prefix
_QUIET = re2.Options()
_QUIET.log_errors = False  # a pattern that does not compile is an answer here, not news for stderr

_PLACEHOLDER = re.compile(r"<(?:NUM|HEX|IP|PATH|HOST|RANK|PCI|\*)>")
# A PCI address as masking leaves it: 0000:86:00.0 -> <NUM>:<NUM>:<NUM>, 0000:3b:00.0 -> <NUM>:3b:<NUM>.
_PCI_MASKED = re.compile(
    r"(?<![\w<>])(?:<NUM>|[0-9a-fA-F]{2,4}):(?:<NUM>|[0-9a-fA-F]{2}):(?:<NUM>|[0-9a-fA-F]{2})"
    r"(?![\w<>])"
)
_ALNUM = re.compile(r"[0-9A-Za-z]+")
_HEXISH = re.compile(r"\d[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*")  # 3b, 1b000: a bus or device id
_META = set(r"\.^$|?*+()[]{}")
_PREFIX_WORD = re.compile(
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|Mon|Tue|Wed|Thu|Fri|Sat|Sun)"  # syslog, `date`
    r"|[IWEF]\d{4}|\[[IWEF]"  # glog W0501 and torch's C++ [W
    r"|\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\]?:?"  # a level on its own
    r"|\[?(?:[A-Z]+\|)?[\w./-]+\.(?:py|c|cc|cpp|cu|h|hpp):<NUM>(?::\w+)?\]?:?"  # file:line, [engine.py:12:step]
    r"|kernel:|[\w-]+\[<NUM>\]:"  # syslog tags
)


def derive_from_template(template: str, line: str) -> str:
    """A regex for the message of `line`, from its Drain3 template; it always matches `line`.

    Falls back to the line's own masked form when the template (generalised over other lines by Drain3)
    does not fit it, and to the line's escaped text when neither does.
    """
    text = line.rstrip("\r\n")
    for source in (template, mask(strip_prefixes(text))):
        pattern = _from_template(source)
        if _matches(pattern, text):
            return pattern
    pattern = SPACE.join(_escape(word) for word in strip_prefixes(text).split())
    if not _matches(pattern, text):
        raise KnowledgeError(f"cannot derive a regex from line {text[:80]!r}: give a pattern by hand")
    return pattern


def _matches(pattern: str, text: str) -> bool:
    if not pattern:
        return False
    try:
        return re2.compile(pattern, _QUIET).search(text) is not None
    except re2.error:
        return False


def _from_template(template: str) -> str:
    # A bus id whose digits happened to be decimal on this line must still match one with hex letters.
    template = _PCI_MASKED.sub(lambda m: "<PCI>" if "<NUM>" in m.group() else m.group(), template)
    words = template.split()
    if not words:
        return ""
    core = words[_core_start(words) :]
    out = _word(core[0])
    for word in core[1:]:
        # " <RANK>" carries the separator it replaced, so it joins its word without a space class.
        out += _word(word) if word.startswith("<RANK>") else SPACE + _word(word)
    return out


def _core_start(words: list[str]) -> int:
    """Where the message starts: after the leading prefix-like words, yet keeping MIN_CORE_LETTERS letters."""
    start = 0
    while start < len(words) - 1 and _prefix_like(words[start]):
        start += 1
    while start > 0 and sum(_letters(w) for w in words[start:]) < MIN_CORE_LETTERS:
        start -= 1
    return start


def _prefix_like(word: str) -> bool:
    bare = _PLACEHOLDER.sub("", word)
    return not any(c.isalpha() for c in bare) or _PREFIX_WORD.fullmatch(word) is not None


def _letters(word: str) -> int:
    return sum(c.isalpha() for c in _PLACEHOLDER.sub("", word))


def _word(word: str) -> str:
    """One template word as a regex: placeholders as bounded classes, literal text escaped and generalised."""
    out, pos = [], 0
    for m in _PLACEHOLDER.finditer(word):
        out.append(_literal(word[pos : m.start()]))
        out.append(CLASSES[m.group()])
        pos = m.end()
    out.append(_literal(word[pos:]))
    return "".join(out)


def _literal(text: str) -> str:
    """Literal text, escaped; digits inside it (mlx5_3, sm_90, a bus id 3b) vary from node to node."""
    out, pos = [], 0
    for m in _ALNUM.finditer(text):
        out.append(_escape(text[pos : m.start()]))
        token = m.group()
        if _HEXISH.fullmatch(token):
            out.append(r"[0-9a-fA-F]+")
        else:
            out.append("".join(r"\d+" if part.isdigit() else part for part in re.split(r"(\d+)", token)))
        pos = m.end()
    out.append(_escape(text[pos:]))
    return "".join(out)


def _escape(text: str) -> str:
    """Escape for both RE2 and Hyperscan: metacharacters with a backslash, control characters as \\xNN."""
    return "".join(
        "\\" + c if c in _META else (f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c) for c in text
    )

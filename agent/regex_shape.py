"""Static checks on a proposed regex's shape, read off Python's own regex parser (re._parser, sre_parse).

crashcart never runs a rule in a backtracking engine (Hyperscan and RE2 are automata), but a rule is data that
people copy into grep -P, Python or Elasticsearch, where `(a+)+` or `(\\w+\\s?)*` takes exponential time on a
near-miss line; and such shapes mark a sloppy regex. So the shapes are refused up front, without running them.

The checks are conservative: a repeat whose body holds an unbounded repeat is refused even where the two could
not in fact match the same text (`(?:\\d+\\.)+`), and so is a repeated alternation whose branches start alike, even
where the next character tells them apart (`(x|xy)*`). A proposer can always write those forms another way.

RE2 syntax Python lacks (`\\p{Greek}`, `[[:alpha:]]`, `\\Q...\\E`, `\\x{41}`, `\\z`, `(?<name>...)`) is rewritten to a
Python equivalent of the same shape before parsing, so those patterns are checked too (`parse`).
"""

from __future__ import annotations

import re
import warnings
from functools import cache
from typing import Any

try:  # Python 3.11+
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse

Items = Any  # a parsed sequence: a SubPattern or a plain list of (op, argument) pairs
_ALL = frozenset(range(257))  # Latin-1 plus 256, which stands for "any character above U+00FF"
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_CATEGORY_RE = {"DIGIT": r"\d", "SPACE": r"\s", "WORD": r"\w"}

NESTED = (
    "backtracking: nested quantifier (a repeated group holds an unbounded repeat, like (a+)+ or (\\w+\\s?)*); "
    "write the repeated part once"
)
OVERLAP = (
    "backtracking: alternation of overlapping branches under a repeat (like (a|a)* or (x|xy)*, two branches that "
    "start alike); make the branches start differently or drop the repeat"
)
PADDED = (
    "padded: a leading or trailing .* adds nothing to a search (a rule matches anywhere in a line) and hides how "
    "little the rest says; drop it and keep the message's own words"
)
_ANY = r"[\s\S]"  # what a Unicode class (\p{...}) stands for in the shape: any one character
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


def parse(pattern: str) -> Items | None:
    """Python's parse tree of the pattern (RE2-only syntax rewritten first), or None where Python cannot read it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like
            return sre_parse.parse(python_syntax(pattern))
    except (re.error, RecursionError, OverflowError):
        return None


def python_syntax(pattern: str) -> str:
    """The pattern with RE2 constructs Python lacks replaced by Python ones of the same shape and literals."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        text, i, in_class = _token(pattern, i, in_class)
        out.append(text)
    return "".join(out)


def _token(pattern: str, i: int, in_class: bool) -> tuple[str, int, bool]:
    """One token at i as Python writes it, the index after it, and whether a [...] class is open after it."""
    c = pattern[i]
    if c == "\\" and i + 1 < len(pattern):
        text, end = _escape(pattern, i, in_class)
        return text, end, in_class
    if in_class:
        if pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) > 0:
            return _POSIX.get(pattern[i + 2 : end], "\\s\\S"), end + 2, True  # [:^alpha:] and the like: any
        return c, i + 1, c != "]"
    if c == "[":
        end = i + 1 + pattern.startswith("^", i + 1)
        end += pattern.startswith("]", end)  # a ] first in the class is a literal
        return pattern[i:end], end, True
    if pattern.startswith("(?<", i) and pattern[i + 3 : i + 4] not in ("=", "!"):
        return "(?P<", i + 3, False  # RE2's (?<name>...) is Python's (?P<name>...)
    return c, i + 1, False


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The escape at i (a backslash and what follows) in Python's syntax, and the index after it."""
    kind = pattern[i + 1]
    close = pattern.find("}", i + 2) if pattern.startswith("{", i + 2) else -1
    if kind in "pP":
        return ("\\s\\S" if in_class else _ANY), (close + 1 if close > 0 else i + 3)
    if kind == "x" and close > 0:
        try:
            return re.escape(chr(int(pattern[i + 3 : close], 16))), close + 1
        except (ValueError, OverflowError):
            return pattern[i : close + 1], close + 1  # not a code point: Python refuses it too
    if kind == "Q":
        end = pattern.find("\\E", i + 2)
        end = len(pattern) if end < 0 else end
        return re.escape(pattern[i + 2 : end]), end + 2
    if kind == "z":
        return "\\Z", i + 2
    if kind == "C":
        return ("\\s\\S" if in_class else _ANY), i + 2  # any byte
    return pattern[i : i + 2], i + 2


def _name(op: object) -> str:
    return getattr(op, "name", str(op))


def _children(op: str, av: Any) -> list[Items]:
    """The parsed sequences directly inside one node."""
    if op == "SUBPATTERN":
        return [av[3]]
    if op in _REPEATS:
        return [av[2]]
    if op == "BRANCH":
        return list(av[1])
    if op in ("ASSERT", "ASSERT_NOT"):
        return [av[1]]
    if op == "ATOMIC_GROUP":
        return [av]
    if op == "GROUPREF_EXISTS":
        return [b for b in av[1:] if b is not None]
    return []


def _walk(items: Items) -> list[tuple[str, Any]]:
    """Every node of the tree, depth first."""
    out: list[tuple[str, Any]] = []
    for op, av in items:
        out.append((_name(op), av))
        for child in _children(_name(op), av):
            out.extend(_walk(child))
    return out


def unsupported(items: Items) -> list[str]:
    """Constructs neither RE2 nor Hyperscan supports, each named with why it fails."""
    reasons: dict[str, None] = {}
    for op, av in _walk(items):
        if op in ("ASSERT", "ASSERT_NOT"):
            kind = "lookahead (?=...)/(?!...)" if av[0] == 1 else "lookbehind (?<=...)/(?<!...)"
            reasons[f"unsupported: {kind}; RE2 and Hyperscan have no lookarounds, match the text itself"] = None
        elif op in ("GROUPREF", "GROUPREF_EXISTS"):
            reasons["unsupported: backreference (\\1, (?P=name), (?(1)...)); RE2 and Hyperscan have none"] = None
        elif op in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
            reasons["unsupported: atomic group or possessive quantifier ((?>...), a++); RE2 has neither"] = None
    return list(reasons)


def backtracking(items: Items) -> list[str]:
    """Shapes that take exponential time in a backtracking engine, found without running anything."""
    reasons: dict[str, None] = {}
    for op, av in _walk(items):
        if op not in _REPEATS or av[1] <= 1:
            continue
        body = _walk(av[2])
        if any(o in _REPEATS and a[1] == sre_parse.MAXREPEAT for o, a in body):
            reasons[NESTED] = None
        if any(o == "BRANCH" and _overlapping(a[1]) for o, a in body):
            reasons[OVERLAP] = None
    return list(reasons)


def padded(items: Items) -> list[str]:
    """A `.*` first or last (anchors aside): `.*error.*` is `error` in a search, written to look like more."""
    core = [(_name(op), av) for op, av in items if _name(op) != "AT"]
    return [PADDED] if core and (_dot_star(*core[0]) or _dot_star(*core[-1])) else []


def _dot_star(op: str, av: Any) -> bool:
    return op in _REPEATS and av[0] == 0 and av[1] == sre_parse.MAXREPEAT and [_name(o) for o, _ in av[2]] == ["ANY"]


def _overlapping(branches: list[Items]) -> bool:
    """Whether two branches can start on the same character, or one can match the empty string.

    Python's parser moves a prefix all branches share out in front ((x|xy) becomes x(?:|y)), so an empty branch
    is what branches that start alike leave behind (or an explicit one, which a repeat can take any number of times).
    """
    firsts = [_first(b) for b in branches]
    if any(empty for _, empty in firsts):
        return True
    for i, (chars_i, _) in enumerate(firsts):
        for chars_j, _ in firsts[i + 1 :]:
            if chars_i & chars_j:
                return True
    return False


def _first(items: Items) -> tuple[frozenset[int], bool]:
    """The characters a sequence can start with, and whether it can match the empty string."""
    chars: set[int] = set()
    for op, av in items:
        first, empty = _first_of(_name(op), av)
        chars |= first
        if not empty:
            return frozenset(chars), False
    return frozenset(chars), True


def _first_of(op: str, av: Any) -> tuple[frozenset[int], bool]:
    if op == "LITERAL":
        return frozenset({min(av, 256)}), False
    if op == "NOT_LITERAL":
        return _ALL - {av}, False
    if op == "ANY":
        return _ALL - {10}, False
    if op == "IN":
        return _class(av), False
    if op in ("AT", "ASSERT", "ASSERT_NOT"):
        return frozenset(), True
    if op in _REPEATS:
        chars, empty = _first(av[2])
        return chars, empty or av[0] == 0
    if op == "BRANCH":
        parts = [_first(b) for b in av[1]]
        return frozenset().union(*(c for c, _ in parts)), any(e for _, e in parts)
    if op in ("SUBPATTERN", "ATOMIC_GROUP"):
        return _first(_children(op, av)[0])
    return _ALL, True  # backreferences and the like: assume the worst


def _class(items: list[tuple[Any, Any]]) -> frozenset[int]:
    """The characters of a [...] class (above U+00FF folded into 256)."""
    chars: set[int] = set()
    negate = False
    for op, av in items:
        name = _name(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(min(av, 256))
        elif name == "RANGE":
            chars.update(range(av[0], min(av[1], 256) + 1))
        elif name == "CATEGORY":
            chars |= _category(_name(av))
        else:
            chars |= _ALL
    return _ALL - chars if negate else frozenset(chars)


@cache
def _category(name: str) -> frozenset[int]:
    """CATEGORY_DIGIT, CATEGORY_NOT_WORD, ... as sets of Latin-1 characters (plus 256 where Unicode adds more)."""
    kind = name.removeprefix("CATEGORY_").removeprefix("UNI_")
    negated = kind.startswith("NOT_")
    regex = _CATEGORY_RE.get(kind.removeprefix("NOT_"))
    if regex is None:
        return _ALL
    found = frozenset(i for i in range(256) if re.fullmatch(regex, chr(i))) | {256}
    return (_ALL - found) | {256} if negated else found


def required_literals(items: Items) -> int:
    """How many literal characters every match must contain (branches count their poorest alternative)."""
    total = 0
    for op, av in items:
        name = _name(op)
        if name == "LITERAL":
            total += 1
        elif name in _REPEATS:
            total += av[0] * required_literals(av[2])
        elif name == "BRANCH":
            total += min(required_literals(b) for b in av[1])
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            total += required_literals(_children(name, av)[0])
    return total

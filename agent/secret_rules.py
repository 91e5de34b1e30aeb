"""Secret shapes as rule sets: a maintained vendor set run with RE2, and the few shapes training logs add.

The base is Microsoft's security-utilities rules, which the `microsoft-security-utilities-secret-masker` package
ships as JSON (MIT; azure-cli masks its own output with them): Azure account keys and SAS signatures, Databricks
PATs, npm tokens, JWTs, URL credentials and more, maintained upstream and read from the installed package, never
copied here. They are written for non-backtracking engines (`.+` between two parts), so RE2 runs them: linear on
any input. Crashcart adds only the shapes that no packaged rule set covers and training logs show: presigned
S3/GCS signatures and session tokens, NGC (`nvapi-`), PyPI and Replicate tokens, Sentry DSN keys, cookies and
Docker `auths`. A rule replaces its `refine` or `v` group (else the whole match) and runs only when one of its
literals occurs in the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib.resources import files

import re2
from pydantic import BaseModel, ConfigDict, Field

VENDOR_PACKAGE = "microsoft_security_utilities_secret_masker"
VENDOR_FILES = ("PreciselyClassifiedSecurityKeys.json", "MediumConfidenceSecurityModels.json")
_WORDS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class VendorRule(BaseModel):
    """One entry of the vendor's JSON, as it is spelled there. Not Strict: the fields crashcart does not use
    (checksum seeds, key lengths ...) change upstream and must not break the load."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(alias="Id")
    name: str = Field(alias="Name")
    pattern: str = Field(alias="Pattern")
    signatures: list[str] | None = Field(default=None, alias="Signatures")
    metadata: str | None = Field(default=None, alias="DetectionMetadata")


@dataclass(frozen=True)
class SecretRule:
    """A compiled rule: the placeholder kind, the literals that gate it (lowercased when `fold`), the pattern."""

    kind: str
    literals: tuple[str, ...]
    pattern: re.Pattern[str] | re2._Regexp
    fold: bool = False

    def applies(self, text: str, lower: str) -> bool:
        return not self.literals or any(k in (lower if self.fold else text) for k in self.literals)


# (kind, literals, pattern) in Python's re, built like the rest of redact.py so each stays linear without RE2's
# per-match cost: a literal first, bounded classes, no nested quantifiers. `v` is what is replaced; a pattern that
# starts with (?i) is gated on lowercased literals.
_OWN = [
    (
        "url_signature",
        ("signature=", "sig="),
        r"(?i)[?&;](?:x-amz-signature|x-goog-signature|signature|sig)=(?P<v>[^&\s\"'#<>\\]{32,8192})",
    ),
    (
        "aws_session_token",
        ("security-token=",),
        r"(?i)[?&;]x-(?:amz|goog)-security-token=(?P<v>[^&\s\"'#<>\\]{16,16384})",
    ),
    ("sentry_dsn", ("://",), r"(?i)://(?P<v>[0-9a-f]{32})(?::[0-9a-f]{32})?@"),
    ("cookie", ("cookie:",), r"(?i)(?<![\w-])(?:set-)?cookie:[ \t]*(?P<v>[^\r\n\\'\"]{1,8192})"),
    ("cookie", ("-b", "--cookie"), r"-(?<![\w-]-)(?:b|-cookie)[ \t]+['\"]?(?P<v>[^\s'\"=]{1,128}=[^\s'\"]{1,4096})"),
    (
        "docker_auth",
        ('"auth"', '"identitytoken"', '"registrytoken"'),
        r"(?i)\"(?:auth|identitytoken|registrytoken)\"[ \t]{0,8}:[ \t]{0,8}\"(?P<v>[A-Za-z0-9+/=._-]{8,8192})\"",
    ),
    ("ngc_api_key", ("nvapi-",), r"nvapi-(?<![\w-]nvapi-)[A-Za-z0-9_-]{40,128}"),
    ("pypi_token", ("pypi-",), r"pypi-(?<![\w-]pypi-)Ag[A-Za-z0-9_-]{50,4096}"),
    ("replicate_token", ("r8_",), r"r8_(?<![\w-]r8_)[A-Za-z0-9]{37}(?![\w-])"),
]


def _kind(name: str) -> str:
    """A vendor rule's name as a placeholder kind: AzureStorageAccountLegacyCredentials -> azure_storage_..."""
    return _WORDS.sub("_", name).lower()


def vendor_rules() -> list[VendorRule]:
    """The vendor's rules crashcart runs (precisely classified keys and the medium-confidence models)."""
    root = files(VENDOR_PACKAGE).joinpath("GeneratedRegexPatterns")
    rules: dict[str, VendorRule] = {}
    for name in VENDOR_FILES:
        for entry in json.loads(root.joinpath(name).read_text(encoding="utf-8")):
            rule = VendorRule.model_validate(entry)
            rules.setdefault(rule.id + rule.name, rule)
    return list(rules.values())


@lru_cache(maxsize=1)
def secret_rules() -> tuple[SecretRule, ...]:
    """Crashcart's own shapes first (their kinds are the more telling), then the vendor's, all compiled once."""
    own = [_compiled(kind, literals, pattern, True) for kind, literals, pattern in _OWN]
    vendor = [_compiled(_kind(r.name), tuple(r.signatures or ()), r.pattern, False) for r in vendor_rules()]
    return tuple(own + vendor)


def _compiled(kind: str, literals: tuple[str, ...], pattern: str, own: bool) -> SecretRule:
    fold = pattern.startswith("(?i)")
    compiled = re.compile(pattern, re.ASCII) if own else re2.compile(pattern)
    return SecretRule(kind, tuple(k.lower() for k in literals) if fold else literals, compiled, fold)


def apply_rules(text: str, placeholder: Callable[[str], str]) -> str:
    """The text with every rule's secret replaced by `placeholder(kind)`; earlier placeholders are left alone."""
    lower = text.lower()
    for rule in secret_rules():
        if rule.applies(text, lower):
            text = rule.pattern.sub(partial(_replace, kind=rule.kind, placeholder=placeholder), text)
    return text


def _replace(m: re.Match[str] | re2._Match, kind: str, placeholder: Callable[[str], str]) -> str:
    names = m.re.groupindex
    group = names.get("refine", names.get("v", 0))  # google-re2's start/end take group numbers only
    value, whole = m.group(group), str(m.group(0))
    if value is None or value.startswith("[REDACTED:"):
        return whole
    start, end = m.start(group) - m.start(), m.end(group) - m.start()
    return whole[:start] + placeholder(kind) + whole[end:]

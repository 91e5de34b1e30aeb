"""Redaction of log text before it leaves the machine (to an LLM provider).

Secrets become typed placeholders (`[REDACTED:hf_token]`) that nothing can restore. Hostnames and IPs (opt-in) become
consistent pseudonyms (`host-3`, `domain-1`, `240.0.0.7`, `2001:db8::2`) that `restore` maps back, so the model's
answer can name the real node. Emails are redacted, not pseudonymised: a diagnosis needs no person.

Linear time on hostile input with Python's backtracking `re`: every quantifier is bounded, and every pattern begins
with a lookbehind that refuses to start inside a run of its own leading characters, so a run is tried once and each
try does bounded work (10 MB of 'a' or of 'password=' costs one pass per pattern family).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import partial

from crashcart.agent.secret_rules import apply_rules

_A = re.ASCII

# Token shapes (after gitleaks/detect-secrets rules, loosened in length where vendors change formats), each with the
# literals one of which must be in the text for the pattern to run at all (gitleaks' keywords): most texts skip most.
_TOKENS: list[tuple[str, tuple[str, ...], re.Pattern[str]]] = [
    (kind, keywords, re.compile(pattern, _A))
    for kind, keywords, pattern in [
        (
            "slack_webhook",
            ("hooks.slack.com",),
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w+/-]{20,200}",
        ),
        (
            "aws_access_key",
            ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
            r"A(?<![A-Za-z0-9]A)(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
        ),
        ("gcp_api_key", ("AIza",), r"AIza(?<![\w-]AIza)[\w-]{35}(?![\w-])"),
        ("anthropic_key", ("sk-ant-",), r"sk-ant-(?<![\w-]sk-ant-)[\w-]{20,300}"),  # before openai_key: both start sk-
        ("openai_key", ("sk-",), r"sk-(?<![\w-]sk-)(?:proj-|svcacct-|admin-)?[\w-]{20,300}"),
        ("stripe_key", ("_live_", "_test_"), r"[sr]k_(?<![\w-][sr]k_)(?:live|test)_[A-Za-z0-9]{10,200}"),
        (
            "hf_token",
            ("hf_", "api_org_"),
            r"(?:hf_(?<![\w-]hf_)|api_org_(?<![\w-]api_org_))[A-Za-z0-9]{30,60}(?![\w-])",
        ),
        (
            "slack_token",
            ("xox", "xapp-"),
            r"xox(?<![\w.-]xox)(?:e\.xox)?[abeoprs]-\d[A-Za-z0-9-]{8,250}|xapp-(?<![\w-]xapp-)\d-[A-Za-z0-9-]{10,250}",
        ),
        (
            "github_token",
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
            r"g(?<![\w-]g)(?:h[pousr]_[A-Za-z0-9]{36,251}(?![\w-])|ithub_pat_\w{22,255})",
        ),
        ("gitlab_token", ("gl",), r"gl(?<![\w-]gl)(?:pat|dt|rt|ptt|cbt|soat|ft|imt|oas|agent)-[\w.-]{20,300}"),
        ("jwt", ("eyJ",), r"eyJ(?<![\w-]eyJ)[\w-]{8,4096}\.eyJ[\w-]{8,8192}\.[\w-]{0,4096}={0,2}"),
    ]
]

_PEM_BEGIN = re.compile(r"-{4,5} ?BEGIN ?(?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PEM_END = re.compile(r"-{4,5} ?END ?(?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\r\n]|\\[nr]){0,16384}")  # a key cut off before its END line
_PEM_MAX = 16384
_PUTTY = re.compile(r"Private-Lines: *\d{1,4}(?:\r?\n[A-Za-z0-9+/=]{1,128}){1,256}")

_URL_PASS = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<pre>[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/?#@\[\]]{0,128}:)"
    r"(?P<v>[^\s/?#@]{1,256})@",
    _A,
)
_KV = re.compile(
    r"(?<![A-Za-z0-9])(?P<kw>(?i:secret[_-]?access[_-]?key|session[_-]?token|(?:access|refresh|auth|id|api)[_-]?token"
    r"|api[_-]?key|private[_-]?key(?:[_-]?id)?|client[_-]?secret|pass(?:word|wd|phrase)|(?:proxy-)?authorization"
    r"|secret|token|key(?:[_-]?id)?)|PAT)"
    r"(?:[\"']?[ \t]{0,8}(?:=>|:=|[:=])[ \t]{0,8}|[ \t]{1,8}\.{2,80}[ \t]{1,8})"  # k=v, "k": v, Megatron's k ... v
    r"(?:(?i:bearer|basic|token|digest|bot)[ \t]+)?"
    r"(?:\"(?P<v1>[^\"\r\n]{1,512})|'(?P<v2>[^'\r\n]{1,512})|(?P<v3>[^\s\"',;&]{1,512}))",
    _A,
)
# Literal first, then a lookbehind on the character before it: Python's re then scans for the literal in C.
_ARGS = re.compile(
    r"-(?<![\w-]-)(?:(?:u|-user)[ \t]+['\"]?[^\s:'\"]{1,128}:(?P<u>[^\s'\"/][^\s'\"]{0,255})"  # curl -u user:pass
    r"|-?(?P<pre>(?:[A-Za-z0-9]{1,32}[-_]){0,3})(?P<kw>(?i:password|passwd|token|api[-_]?key|secret|key))"
    r"[ \t]+['\"]?(?P<v>[^\s'\"-][^\s'\"]{0,511}))",
    _A,
)  # --hf-token abc
# -p with a password: glued for mysql/mariadb (`-p secret` there prompts, and `secret` is the database), either way
# for sshpass, spaced for docker login. The command is looked for on the same line, at most _DASH_P_BACK before.
_DASH_P = re.compile(r"-(?<![\w-]-)p(?P<sp>[ \t]?)['\"]?(?P<v>[^\s'\"-][^\s'\"]{0,255})", _A)
_DASH_P_BACK = 512
_DASH_P_COMMANDS = (("mysql", ""), ("mariadb", ""), ("sshpass", ""), ("sshpass", " "), ("docker", " "))
_LOGIN = re.compile(
    r"login(?<![\w-]login)[ \t]+\S{1,128}\s{1,16}password[ \t]+(?P<n>\S{1,512})"  # .netrc
    r"|wandb(?<![\w-]wandb)[ \t]+login(?:[ \t]+--[\w-]{1,32}){0,3}[ \t]+(?P<w>[\w-]{32,128})",
    _A,
)
_BEARER = re.compile(r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,4096}=*)", _A)
# A credential glued to an env-style prefix (PGPASSWORD, MYSQL_PWD, DBPASSWORD): _KV wants a word boundary there.
_ENV = re.compile(
    r"(?<![A-Za-z0-9_])(?P<pre>[A-Z][A-Z0-9_]{0,62}?)(?P<kw>PASSWORD|PASSWD|PASSPHRASE|_PWD|SECRET|TOKEN|APIKEY)"
    r"=[\"']?(?P<v>[^\s\"'`,;&]{1,512})",
    _A,
)
# A base64 run too random to be a word or a path: a PEM body line shown alone, a key with no telling name.
_BLOB = re.compile(r"(?<![A-Za-z0-9+/=_.-])[A-Za-z0-9+/]{40,4096}={0,2}(?![A-Za-z0-9+/=_.-])", _A)
_BLOB_BITS = 4.4  # bits per character: random base64 of 40+ characters has ~4.8-5.2, paths and words ~3.5-4.2
_ESCAPED = (("\\n", "\\\x0b"), ("\\r", "\\\x0c"))  # \n in JSON text -> \ + VT: a boundary for the patterns
_EMAIL = re.compile(r"(?<![\w.%+-])(?P<local>[\w.%+-]{1,64})@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![\w-])", _A)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_HEX4 = r"[0-9a-fA-F]{1,4}"
_IP_RE = re.compile(
    rf"(?<![\w.])(?P<v4>(?:{_OCTET}\.){{3}}{_OCTET})(?![\w+]|\.\d|-\d)"
    rf"|(?<![\w:.])(?P<v6>(?:{_HEX4}:){{7}}{_HEX4}|(?:{_HEX4}:){{1,6}}:(?:{_HEX4}:){{0,5}}{_HEX4})(?![\w:])",
    _A,
)
_VERSIONISH = re.compile(r"(?i)(?:version|ver|release|build|driver|cudnn|nccl|cuda|torch)[ \t:=]{0,3}\Z")
_KEEP_IPS = ("0.0.0.0", "255.255.255.255")

# Hostnames (RFC 1123: letters, digits, hyphens; so `node_17` is an identifier, not a host).
_HOST_NAME = re.compile(
    r"(?:node|host|worker|compute|dgx|hgx|nid|cn|srv|server)-?\d{1,6}"  # node17, nid001234
    r"|(?:node|host|worker|compute|dgx|hgx|srv|server|ip)(?:-[a-z0-9]{1,16}){0,4}-\d{1,6}"  # dgx-042, ip-10-0-0-12
    r"|gpu(?:-[a-z0-9]{1,16}){1,4}-\d{1,6}|gpu\d{3,6}"  # gpu-a100-017, gpu017 (gpu0..gpu99 are devices)
    r"|(?:[a-z0-9]{1,32}-){1,6}(?:worker|master|launcher|node|host)-\d{1,6}",  # Kubernetes pods
    _A | re.IGNORECASE,
)
_HOST_TMPL = r"(?<![\w.-]){}(?P<n>[A-Za-z0-9][\w-]{{0,62}})(?P<d>(?:\.[A-Za-z][\w-]{{0,62}}){{1,8}})?(?![\w-])"
_HOST_TOKEN = re.compile(_HOST_TMPL.format(""), _A)
_HOST_TOKEN_DIGIT = re.compile(_HOST_TMPL.format(r"(?=[A-Za-z_-]{0,62}\d)"), _A)  # only names with digits: fewer calls
_UUIDISH = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-")  # GPU-5c1f2a3b-4d5e-...: a device, not a host
_HOST_CONTEXT = re.compile(
    r"^(?P<a>[A-Za-z0-9][\w.-]{0,252}):\d{1,10}:\d{1,10}(?= \[\d{1,6}\])"  # NCCL's host:pid:tid prefix
    r"|(?<![A-Za-z0-9])(?i:node failure on|master[_-]addr(?:ess)?|(?:slurmd_)?nodename|hostname|host)"
    r"(?:[ \t]*[=:][ \t]*[\"']?|[ \t]+)(?P<b>[A-Za-z][A-Za-z0-9.-]{0,252})",
    _A | re.MULTILINE,
)
_INTERNAL_TLDS = {"internal", "local", "lan", "corp", "cluster", "intra", "localdomain", "home", "priv", "private"}
_FILE_EXTS = {
    "log",
    "out",
    "err",
    "txt",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "py",
    "sh",
    "csv",
    "gz",
    "zst",
    "tar",
    "pt",
    "bin",
    "ckpt",
    "safetensors",
    "md",
    "html",
    "nsys-rep",
    "so",
    "cu",
    "cpp",
    "h",
}
_NOT_HOSTS = {"localhost", "none", "null", "true", "false"}
_PSEUDONYM = re.compile(
    r"(?<![A-Za-z0-9_])(?:host|domain)-\d+(?!\d)|(?<![\w.])240\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\d)"
    r"|(?<![\w:])2001:db8::[0-9a-f]{1,4}(?![\w:])",
    _A,
)

_PLACEHOLDER = re.compile(r"\$\{?[A-Z_][A-Z0-9_]*\}?|<[^<>]*>|\[REDACTED:\w+\].*|%\(?\w*\)?s|[{\[(]|[*xX.#?_-]+", _A)
_NULLS = {"none", "null", "nil", "true", "false", "undefined", "redacted", "hidden", "masked", "unset", "empty"}
_KEY_OWNERS = {
    "api",
    "access",
    "secret",
    "private",
    "client",
    "signing",
    "encryption",
    "master",
    "account",
    "storage",
    "service",
    "auth",
    "wandb",
    "openai",
    "anthropic",
    "hf",
    "license",
    "subscription",
    "app",
    "ssh",
    "deploy",
}
_TOKEN_OWNERS = {
    "access",
    "auth",
    "refresh",
    "session",
    "id",
    "api",
    "bearer",
    "private",
    "personal",
    "oauth",
    "hf",
    "hub",
    "github",
    "gh",
    "gitlab",
    "wandb",
    "slack",
    "bot",
    "user",
    "secret",
    "deploy",
    "runner",
    "registry",
    "csrf",
    "xsrf",
    "npm",
    "pypi",
    "docker",
    "vault",
    "kube",
    "k8s",
    "service",
    "app",
}


def _is_placeholder(value: str) -> bool:
    """Values that hold no secret (None, $HF_TOKEN, <pad>, ****, an earlier placeholder): left as they are."""
    v = value.strip()
    return any(not c or c.lower() in _NULLS or _PLACEHOLDER.fullmatch(c) for c in (v, v.rstrip(")]},;")))


def _looks_random(value: str) -> bool:
    """A credential-like value (long, from a token alphabet, high entropy), not a word, path or parameter name."""
    if len(value) < 16 or value[0] in "/.~" or not re.fullmatch(r"[A-Za-z0-9+/=_-]+", value, _A):
        return False
    if not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)) or value.count("_") > 2:
        return False
    return _bits(value) >= 3.5


def _bits(value: str) -> float:
    """Shannon entropy per character: how random a value looks."""
    return -sum(n / len(value) * math.log2(n / len(value)) for n in Counter(value).values())


def _ident_before(text: str, end: int) -> str:
    """The identifier that ends where a keyword starts (`WANDB_` before `API_KEY`), at most 64 characters."""
    start = end
    while start > 0 and end - start < 64 and (text[start - 1].isalnum() or text[start - 1] in "_-."):
        start -= 1
    return text[start:end]


def _kv_kind(prefix: str, keyword: str, value: str) -> str | None:
    """The kind of secret `prefix+keyword = value` holds, or None when the pair is benign (pad_token: <pad>)."""
    if _is_placeholder(value):
        return None
    prefix, kw = prefix.lstrip("-_."), keyword.lower()
    full = (prefix + keyword).lower().replace("-", "_")
    if kw in ("token", "key", "key_id", "keyid", "key-id", "pat"):  # generic: trust only env style or a known owner
        if len(value) < 8 or value.isdigit() or value.startswith(("/", "~/", "./")):
            return None  # {"token": 12}, SSH_KEY=/home/u/.ssh/id_rsa: a number or a path, not a credential
        env = prefix != "" and prefix == prefix.upper() and keyword.isupper() and any(c.isalpha() for c in prefix)
        owner = re.split(r"[._-]", prefix.rstrip("_-.").lower())[-1] if prefix else ""
        owners = _TOKEN_OWNERS if kw in ("token", "pat") else _KEY_OWNERS
        trusted = env or owner in owners or (not prefix and kw == "token")
        if not trusted and (kw == "pat" or not _looks_random(value)):
            return None
    if "wandb" in full:
        return "wandb_api_key"
    if "aws" in full or "secret_access" in full or "secretaccess" in full:
        return "aws_session_token" if "session" in full else "aws_secret_key"
    if "private" in full and full.endswith("id"):
        return "gcp_private_key_id"
    for part, kind in (
        ("pass", "password"),
        ("authorization", "auth_header"),
        ("secret", "secret"),
        ("token", "token"),
    ):
        if part in full:
            return kind
    return "token" if kw == "pat" else "api_key"


def _token_ok(kind: str, token: str) -> bool:
    """Loose shapes need a random-looking body, so `sk-some-hyphenated-words` is not an OpenAI key."""
    if kind == "openai_key":
        body = token.split("-", 1)[1]
        return any(c.isdigit() for c in body) and any(c.isupper() for c in body)
    if kind == "hf_token":
        body = token.rsplit("_", 1)[1]
        return not (body.islower() or body.isupper())
    return True


class Redactor:
    """Redacts secrets and (opt-in) pseudonymises hosts and IPs consistently across every text it is given."""

    def __init__(
        self,
        hosts: bool = False,
        ips: bool = False,
        extra_patterns: list[str] | None = None,
        known_hosts: Iterable[str] | None = None,
    ) -> None:
        """known_hosts (the job's node names) are pseudonymised wherever they occur, even with hosts=False.
        extra_patterns are the caller's regexes: the whole match (or group 1 when there is one) becomes
        [REDACTED:custom]; an invalid one raises re.error here, not at redaction time."""
        self.hosts, self.ips = hosts, ips
        self._extra = [re.compile(p) for p in extra_patterns or []]
        self._fwd: dict[tuple[str, str], str] = {}  # (space, original lowercased) -> pseudonym
        self._rev: dict[str, str] = {}  # pseudonym -> original as first seen
        self._known: set[str] = set()  # host labels to pseudonymise wherever they occur (lowercase)
        self._domains: set[str] = set()  # domains seen after a host
        self._count: Counter[str] = Counter()
        self._issued: Counter[str] = Counter()  # pseudonyms issued per space
        for name in known_hosts or []:
            self._learn_host(name)

    @property
    def mapping(self) -> dict[str, str]:
        """Pseudonym -> original, for hosts, their domains and IPs (secrets never appear here)."""
        return dict(self._rev)

    @property
    def count(self) -> dict[str, int]:
        """Redactions and pseudonymisations so far, by kind (`hf_token`, `password`, `email`, `host`, `ip`, ...)."""
        return dict(self._count)

    def redact(self, text: str) -> str:
        """The text with secrets replaced by [REDACTED:<kind>] and, when enabled, hosts and IPs by pseudonyms."""
        return self._pseudonymise(self._redact_secrets(text))

    def restore(self, text: str) -> str:
        """Pseudonyms back to the real hosts, domains and IPs; secret placeholders stay as they are."""
        return _PSEUDONYM.sub(lambda m: self._rev.get(m.group(0), m.group(0)), text)

    def _redact_secrets(self, text: str) -> str:
        """Private key blocks first (they span lines and escapes), then the rest with escaped newlines as
        boundaries (`\\nHF_TOKEN=...` inside a JSON string), each family only when its literals occur."""
        if "PRIVATE KEY" in text or "Private-Lines" in text:
            text = self._private_keys(text)
        shield = "\\" in text and "\x0b" not in text and "\x0c" not in text
        if shield:
            for escape, boundary in _ESCAPED:
                text = text.replace(escape, boundary)
        text = self._redact_lines(text)
        if shield:  # a backslash a secret's value took with it leaves its boundary alone: it is put back too
            for escape, boundary in _ESCAPED:
                text = text.replace(boundary, escape).replace(boundary[1], escape)
        return text

    def _redact_lines(self, text: str) -> str:
        """Vendor shapes, rule sets, then keywords and contexts, then random-looking blobs: earlier wins."""
        for kind, keywords, pattern in _TOKENS:
            if any(k in text for k in keywords):
                text = pattern.sub(partial(self._token_sub, kind=kind), text)
        text = apply_rules(text, self._placeholder)
        if "://" in text:
            text = _URL_PASS.sub(self._url_sub, text)
        lower = text.lower()
        if any(k in lower for k in ("pass", "secret", "token", "key", "authorization", "pat")):
            text = _KV.sub(self._kv_sub, text)
        if any(k in text for k in ("PASS", "_PWD", "SECRET", "TOKEN", "APIKEY")):
            text = _ENV.sub(self._env_sub, text)
        if "-" in text:
            text = _ARGS.sub(self._args_sub, text)
        if any(c in text for c, _ in _DASH_P_COMMANDS):
            text = _DASH_P.sub(self._dash_p_sub, text)
        if "login" in text:
            text = _LOGIN.sub(self._args_sub, text)
        if "bearer" in lower:
            text = _BEARER.sub(lambda m: self._replace_group(m, "v", "token"), text)
        if "@" in text:
            text = _EMAIL.sub(self._email_sub, text)
        text = _BLOB.sub(self._blob_sub, text)
        for pattern in self._extra:
            text = pattern.sub(lambda m: self._replace_group(m, 1 if m.re.groups else 0, "custom"), text)
        return text

    def _pseudonymise(self, text: str) -> str:
        """IPs, then hosts: first learn names from their contexts (NCCL prefixes, master_addr=...), then replace
        every token that is a learned, known or host-shaped name."""
        if self.ips:
            text = _IP_RE.sub(self._ip_sub, text)
        if self.hosts:
            for m in _HOST_CONTEXT.finditer(text):
                if m["a"] and any(c.isalpha() for c in m["a"]):
                    self._learn_host(m["a"])
                elif m["b"] and self._plausible_host(m["b"].rstrip(".")):
                    self._learn_host(m["b"].rstrip("."))
        if self.hosts or self._known:
            digitless = any(not any(c.isdigit() for c in name) for name in self._known)
            text = (_HOST_TOKEN if digitless else _HOST_TOKEN_DIGIT).sub(self._host_sub, text)
        return text

    # -- secrets -------------------------------------------------------------------------------------------------

    def _placeholder(self, kind: str) -> str:
        self._count[kind] += 1
        return f"[REDACTED:{kind}]"

    def _replace_group(self, m: re.Match[str], group: int | str, kind: str) -> str:
        """The match with only `group` replaced by a placeholder (the key, scheme and user stay readable)."""
        if _is_placeholder(m.group(group)) and kind != "custom":
            return m.group(0)
        start, end = m.span(group)
        return m.group(0)[: start - m.start()] + self._placeholder(kind) + m.group(0)[end - m.start() :]

    def _private_keys(self, text: str) -> str:
        """PEM/OpenSSH/PGP private key blocks (also inside JSON with \\n escapes) and PuTTY private lines."""
        out: list[str] = []
        pos = 0
        end_match: re.Match[str] | None = None
        searched_from = -1
        for m in _PEM_BEGIN.finditer(text):
            if m.start() < pos:
                continue
            if searched_from < 0 or (end_match is not None and end_match.start() < m.end()):
                end_match, searched_from = _PEM_END.search(text, m.end()), m.end()  # each END is searched for once
            if end_match is not None and end_match.start() - m.end() <= _PEM_MAX:
                stop = end_match.end()
            else:
                body = _PEM_BODY.match(text, m.end())
                stop = body.end() if body else m.end()
            kind = "ssh_private_key" if "SSH" in m.group(0) else "private_key"
            out += [text[pos : m.start()], self._placeholder(kind)]
            pos = stop
        out.append(text[pos:])
        return _PUTTY.sub(lambda m: self._placeholder("ssh_private_key"), "".join(out))

    def _token_sub(self, m: re.Match[str], kind: str) -> str:
        return self._placeholder(kind) if _token_ok(kind, m.group(0)) else m.group(0)

    def _url_sub(self, m: re.Match[str]) -> str:
        if m["v"].startswith("[REDACTED:"):
            return m.group(0)
        return m["pre"] + self._placeholder("url_password") + "@"

    def _kv_sub(self, m: re.Match[str]) -> str:
        group = "v1" if m["v1"] is not None else "v2" if m["v2"] is not None else "v3"
        kind = _kv_kind(_ident_before(m.string, m.start()), m["kw"], m[group])
        return self._replace_group(m, group, kind) if kind else m.group(0)

    def _env_sub(self, m: re.Match[str]) -> str:
        keyword = "PASSWORD" if m["kw"] in ("_PWD", "PASSWD", "PASSPHRASE") else m["kw"]
        kind = _kv_kind(m["pre"], keyword, m["v"])
        return self._replace_group(m, "v", kind) if kind else m.group(0)

    def _dash_p_sub(self, m: re.Match[str]) -> str:
        before = m.string[max(0, m.start() - _DASH_P_BACK) : m.start()]
        before = before[before.rfind("\n") + 1 :]  # the same line only
        spacing = m["sp"].replace("\t", " ")
        if any(spacing == sp and command in before for command, sp in _DASH_P_COMMANDS):
            return self._replace_group(m, "v", "password")
        return m.group(0)

    def _blob_sub(self, m: re.Match[str]) -> str:
        blob = m.group(0)
        mixed = any(c.isupper() for c in blob) and any(c.islower() for c in blob) and any(c.isdigit() for c in blob)
        return self._placeholder("encoded_secret") if mixed and _bits(blob) >= _BLOB_BITS else blob

    def _args_sub(self, m: re.Match[str]) -> str:
        if m.re is _ARGS and m["v"] is not None:
            kind = _kv_kind(m["pre"], m["kw"], m["v"])
            return self._replace_group(m, "v", kind) if kind else m.group(0)
        group, kind = next(
            (g, k)
            for g, k in (("u", "password"), ("n", "password"), ("w", "wandb_api_key"))
            if g in m.re.groupindex and m[g]
        )
        return self._replace_group(m, group, kind)

    def _email_sub(self, m: re.Match[str]) -> str:
        if m["local"].lower() == "git" or m.string[max(0, m.start() - 3) : m.start()] == "://":
            return m.group(0)  # git@github.com:org/repo, https://user@host: a service and a URL user, not a person
        return self._placeholder("email")

    # -- pseudonyms ----------------------------------------------------------------------------------------------

    def _pseudonym(self, space: str, original: str) -> str:
        key = (space, original.lower())
        if key not in self._fwd:
            self._issued[space] += 1
            n = self._issued[space]
            if space == "ipv4":
                fake = f"240.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"  # 240/4 is reserved: never a real node
            elif space == "ipv6":
                fake = f"2001:db8::{n:x}"  # the documentation prefix
            else:
                fake = f"{space}-{n}"
            self._fwd[key] = fake
            self._rev[fake] = original
        self._count["ip" if space.startswith("ip") else space] += 1
        return self._fwd[key]

    def _ip_sub(self, m: re.Match[str]) -> str:
        ip = m.group(0)
        if m["v4"] and (ip in _KEEP_IPS or ip.startswith("127.")):
            return ip  # loopback and wildcard say how a socket was bound, and name no machine
        if _VERSIONISH.search(m.string, max(0, m.start() - 24), m.start()):
            return ip  # cuDNN version 8.9.2.26
        return self._pseudonym("ipv4" if m["v4"] else "ipv6", ip)

    def _learn_host(self, name: str) -> None:
        """Remember a host (and its domain, for an FQDN) so every later occurrence is pseudonymised."""
        label, _, domain = name.strip().partition(".")
        if label and label.lower() not in _NOT_HOSTS:
            self._known.add(label.lower())
            if domain and domain.rsplit(".", 1)[-1].lower() not in _FILE_EXTS:
                self._domains.add(domain.lower())

    @staticmethod
    def _plausible_host(name: str) -> bool:
        """host=trainer3 or host=x.cluster.internal, not Host: api.openai.com or host=s3.us-west-2.amazonaws.com."""
        label, _, domain = name.partition(".")
        internal = domain.rsplit(".", 1)[-1].lower() in _INTERNAL_TLDS
        return any(c.isdigit() for c in label) and (not domain or internal or _HOST_NAME.fullmatch(label) is not None)

    def _is_host(self, name: str) -> bool:
        return name.lower() in self._known or (self.hosts and _HOST_NAME.fullmatch(name) is not None)

    def _is_domain(self, domain: str) -> bool:
        low = domain.lower()
        last = low.rsplit(".", 1)[-1]
        return low in self._domains or last in _INTERNAL_TLDS or ("." in low and last not in _FILE_EXTS)

    def _host_parts(self, name: str) -> tuple[str, str, str] | None:
        """(text before, host, text after) for a token that is or holds a host on hyphen boundaries, else None."""
        if self._is_host(name):
            return "", name, ""
        parts = name.split("-")
        for k in range(len(parts) - 1, 0, -1):  # node07-ib0: the longest host-shaped head
            head = "-".join(parts[:k])
            if self._is_host(head):
                return "", head, "-" + "-".join(parts[k:])
        for k in range(1, len(parts)):  # rank3-node07: a known name at the end
            tail = "-".join(parts[k:])
            if tail.lower() in self._known:
                return "-".join(parts[:k]) + "-", tail, ""
        return None

    def _host_sub(self, m: re.Match[str]) -> str:
        name, dom = m["n"], (m["d"] or "")[1:]
        if _UUIDISH.search(name):
            return m.group(0)  # GPU-5c1f2a3b-4d5e-...
        parts = self._host_parts(name)
        if (
            parts is None
            and self.hosts
            and dom.rsplit(".", 1)[-1].lower() in _INTERNAL_TLDS
            and any(c.isdigit() for c in name)
        ):
            parts = ("", name, "")  # lustre3.cluster.internal
        if parts is None:
            return m.group(0)
        out = parts[0] + self._pseudonym("host", parts[1]) + parts[2]
        if dom and self._is_domain(dom):
            return out + "." + self._pseudonym("domain", dom)
        return out + ("." + dom if dom else "")

"""The rule sets behind the redactor: the vendor's rules load from the installed package and compile in RE2, and
each of crashcart's own shapes replaces only its value."""

from __future__ import annotations

import pytest
import re2

from crashcart.agent.secret_rules import VENDOR_FILES, apply_rules, secret_rules, vendor_rules


def _mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def test_the_vendor_rules_load_from_the_package_and_all_compile_in_re2() -> None:
    rules = vendor_rules()
    assert len(VENDOR_FILES) == 2 and len(rules) >= 30
    names = {r.name for r in rules}
    assert {"AzureStorageAccountLegacyCredentials", "LooseSasSecret", "AzureDatabricksPat", "GenericJwt"} <= names
    assert all(isinstance(re2.compile(r.pattern), type(re2.compile("x"))) for r in rules)
    assert len(secret_rules()) > len(rules)


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (  # Azure: the vendor's rule, the account name stays
            "AccountName=mlckpt;AccountKey=" + "k" * 40 + "Q" * 46 + "==;EndpointSuffix=core.windows.net",
            "AccountName=mlckpt;AccountKey=[REDACTED:azure_storage_account_legacy_credentials];EndpointSuffix="
            "core.windows.net",
        ),
        (
            "DATABRICKS_HOST=x DATABRICKS_TOKEN=dapi" + "0a1b2c3d" * 4,
            "DATABRICKS_HOST=x DATABRICKS_TOKEN=[REDACTED:azure_databricks_pat]",
        ),
        (
            "GET /o?X-Amz-Date=1&X-Amz-Signature=" + "ab12" * 16 + " 403",
            "GET /o?X-Amz-Date=1&X-Amz-Signature=[REDACTED:url_signature] 403",
        ),
        (
            "dsn=https://" + "0f" * 16 + "@o1.ingest.sentry.io/2",
            "dsn=https://[REDACTED:sentry_dsn]@o1.ingest.sentry.io/2",
        ),
        ("header: Set-Cookie: sid=abc; Path=/", "header: Set-Cookie: [REDACTED:cookie]"),
        (
            '{"auths": {"nvcr.io": {"auth": "JG9hdXRodG9rZW46eHl6"}}}',
            '{"auths": {"nvcr.io": {"auth": "[REDACTED:docker_auth]"}}}',
        ),
        ("key r8" + "_" + "Ab1" * 12 + "C ok", "key [REDACTED:replicate_token] ok"),
        ("an r8_ prefix alone, nvapi- and pypi- as words", "an r8_ prefix alone, nvapi- and pypi- as words"),
    ],
)
def test_each_rule_replaces_only_the_value(line: str, shown: str) -> None:
    assert apply_rules(line, _mark) == shown


def test_earlier_placeholders_are_left_alone() -> None:
    line = "&sig=[REDACTED:url_signature]&x-amz-security-token=[REDACTED:aws_session_token]"
    assert apply_rules(line, _mark) == line

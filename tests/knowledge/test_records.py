"""knowledge/records.py: the shared records, and records made from trusted values without validation."""

from __future__ import annotations

from datetime import datetime

from crashcart.knowledge.records import LineRef, trusted

FIELDS = {"file": "rank_3.out", "line": 7, "text": "[rank3]: NCCL error", "node": None, "rank": 3, "time": None}


def test_a_trusted_record_is_the_validated_one() -> None:
    made, validated = trusted(LineRef, dict(FIELDS)), LineRef(**FIELDS)
    assert made == validated and made.model_dump() == validated.model_dump()
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_dump_json() == validated.model_dump_json()


def test_a_trusted_record_changes_and_copies_as_any_record() -> None:
    made = trusted(LineRef, dict(FIELDS))
    made.time = datetime(2024, 3, 14)
    assert made.model_copy(update={"line": 8}) == LineRef(**{**FIELDS, "line": 8, "time": datetime(2024, 3, 14)})

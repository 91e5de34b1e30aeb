"""agent/llm_answer.py: finding the JSON object in a reply, linearly, refusing replies no answer needs, and reading
a right answer written a little off the schema as the right answer."""

from __future__ import annotations

import json
import re
import time
from types import SimpleNamespace

import pytest

from crashcart.agent import llm_answer
from crashcart.agent.llm_answer import MAX_REPLY_CHARS, AnswerError, parse_answer

ANSWER = {
    "failure_class": "gpu_hardware",
    "action": "drain_node_and_retry",
    "evidence": [{"file": "kernel-node07.log", "line": 2}],
    "faulty_nodes": ["node07"],
    "rationale": "XID 79: the GPU fell off the bus.",
}
CITEABLE = {("kernel-node07.log", 2)}
NODES = {"node07"}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(ANSWER),
        "```json\n" + json.dumps(ANSWER) + "\n```",
        "Here it is:\n```\n" + json.dumps(ANSWER) + "\n```\nHope that helps.",
        "```bash\nnvidia-smi -q\n```\nand the answer:\n```json\n" + json.dumps(ANSWER) + "\n```",
        "The answer is " + json.dumps(ANSWER) + " as asked.",
        "```json\n" + json.dumps(ANSWER),  # the closing fence cut off
    ],
    ids=["bare", "fenced", "untagged-fence", "second-fence", "in-prose", "unclosed-fence"],
)
def test_the_answer_is_found_bare_fenced_or_in_prose(reply: str) -> None:
    answer = parse_answer(reply, CITEABLE, NODES)
    assert (answer.failure_class.value, answer.faulty_nodes) == ("gpu_hardware", ["node07"])


def test_a_reply_longer_than_any_answer_is_refused_before_parsing() -> None:
    huge = "```{" * 500_000  # 2 MB: a fence regex with `.*` backtracked over all of it at every fence
    started = time.perf_counter()
    with pytest.raises(AnswerError, match=r"2,000,000 characters, over the 32,000"):
        parse_answer(huge, CITEABLE, NODES)
    assert time.perf_counter() - started < 1.0


def test_the_search_is_linear_plain_string_work_and_no_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not [v for v in vars(llm_answer).values() if isinstance(v, re.Pattern)]
    decoded: list[int] = []

    def loads(text: str) -> object:
        decoded.append(len(text))
        return json.loads(text)

    monkeypatch.setattr(llm_answer, "json", SimpleNamespace(loads=loads, JSONDecodeError=json.JSONDecodeError))
    broken = '```json\n{"failure_class": }\n```\n'  # every fence holds an object that does not decode
    reply = broken * (MAX_REPLY_CHARS // len(broken))
    assert len(reply) <= MAX_REPLY_CHARS
    with pytest.raises(AnswerError, match="no JSON object"):
        parse_answer(reply, CITEABLE, NODES)
    assert len(decoded) == reply.count(broken) + 1  # each block once, then the outermost {...} once
    assert sum(decoded) <= 2 * len(reply)  # each character reaches the decoder at most twice


@pytest.mark.parametrize("written", ["rank3", "Rank 3", "rank_3", "rank 3", "3"])
def test_a_rank_the_logs_show_may_be_named_as_the_faulty_place_however_written(written: str) -> None:
    reply = json.dumps(ANSWER | {"faulty_nodes": [written]})
    assert parse_answer(reply, CITEABLE, NODES | {"rank 3"}).faulty_nodes == ["rank 3"]
    with pytest.raises(AnswerError, match="nodes the logs do not show: rank 3"):
        parse_answer(reply, CITEABLE, NODES)


@pytest.mark.parametrize(
    "written",
    [
        ANSWER | {"confidence": 0.93, "faulty_ranks": [3]},  # fields the schema does not have
        ANSWER | {"evidence": [{"file": "kernel-node07.log", "line": 2, "text": "NVRM: Xid (PCI:0000:3b:00): 79"}]},
        ANSWER | {"evidence": ["[kernel-node07.log:2]"]},  # as the context shows a line
        ANSWER | {"evidence": "kernel-node07.log:2"},  # one citation, no list
        ANSWER | {"failure_class": "GPU_HARDWARE", "action": "Drain node and retry"},
        {k: v for k, v in ANSWER.items() if k not in ("action", "rationale")},  # the class's usual action
    ],
    ids=["extra-fields", "cited-with-text", "bracketed", "single", "spelled", "no-action"],
)
def test_a_right_answer_written_off_the_schema_is_read_as_the_right_answer(written: dict) -> None:
    answer = parse_answer(json.dumps(written), CITEABLE, NODES)
    assert (answer.failure_class.value, answer.action.value) == ("gpu_hardware", "drain_node_and_retry")
    assert [(c.file, c.line) for c in answer.evidence] == [("kernel-node07.log", 2)]


def test_leniency_never_admits_a_line_not_shown_or_a_class_outside_the_taxonomy() -> None:
    with pytest.raises(AnswerError, match="not in the logs shown: kernel-node07.log:3"):
        parse_answer(json.dumps(ANSWER | {"evidence": ["kernel-node07.log:3"]}), CITEABLE, NODES)
    with pytest.raises(AnswerError, match="failure_class"):
        parse_answer(json.dumps(ANSWER | {"failure_class": "gpu_trouble"}), CITEABLE, NODES)
    with pytest.raises(AnswerError, match="evidence"):
        parse_answer(json.dumps(ANSWER | {"evidence": "see the kernel log"}), CITEABLE, NODES)


def test_the_schema_sent_to_servers_still_asks_for_every_field_the_prompt_does() -> None:
    assert set(llm_answer.answer_schema()["required"]) == {"failure_class", "action", "evidence", "rationale"}

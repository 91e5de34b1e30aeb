"""The LLM's answer: a strict schema, parsed from the model's text and checked against what it was shown.

A model may only cite lines that were in its context; a citation of any other line, an unknown node or a
class outside the taxonomy makes the answer invalid, and the agent asks again with the error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from crashcart.knowledge.records import as_place
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass, Stage


class Lenient(BaseModel):
    """Base of what a model writes: fields it adds (a `confidence`, a cited line's `text`) are ignored, not an error.

    Unlike the project's records (knowledge.records.Strict), a reply is the one input whose writer cannot be
    held to the schema: a model that names the right class and cites the right line but adds a field is right.
    """

    model_config = ConfigDict(extra="ignore")


class LineCite(Lenient):
    """A reference to one line of the context: the file and line number exactly as shown."""

    file: str = Field(max_length=500)
    line: int = Field(ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_reference(cls, value: Any) -> Any:
        """`"[file:line]"` or `"file:line"`, as the context shows a line, is a citation too."""
        if not isinstance(value, str):
            return value
        file, _, line = value.strip().removeprefix("[").removesuffix("]").rpartition(":")
        return {"file": file, "line": line} if file and line.strip().isdigit() else value


def _token(value: Any) -> Any:
    """`GPU_OOM`, `gpu-oom`, ` gpu oom ` as the taxonomy writes it: gpu_oom."""
    return "_".join(value.strip().lower().replace("-", " ").split()) if isinstance(value, str) else value


class RuleSuggestion(Lenient):
    """A regex the model suggests as a new fast-filter rule for this failure."""

    regex: str = Field(min_length=1, max_length=300)
    failure_class: FailureClass
    why: str = Field(max_length=400)

    @field_validator("failure_class", mode="before")
    @classmethod
    def _taxonomy_word(cls, value: Any) -> Any:
        return _token(value)


class LLMAnswer(Lenient):
    """What the model must return (its JSON schema, with every field the prompt asks for required, is sent to
    servers that support structured output). Read leniently: an answer without an action takes the class's
    usual one, a single citation need not be in a list."""

    failure_class: FailureClass
    action: Action
    evidence: list[LineCite] = Field(min_length=1, max_length=8)
    faulty_nodes: list[str] = Field(default_factory=list, max_length=16)
    stage: Stage | None = None
    rationale: str = Field(default="", max_length=1500)
    mitigation: list[str] = Field(default_factory=list, max_length=10)
    proposed_rule: RuleSuggestion | None = None

    @field_validator("failure_class", "action", "stage", mode="before")
    @classmethod
    def _taxonomy_words(cls, value: Any) -> Any:
        return _token(value)

    @field_validator("evidence", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict | str) else value

    @model_validator(mode="before")
    @classmethod
    def _usual_action(cls, value: Any) -> Any:
        """No action given: the class's usual one (the taxonomy's), when the class is one."""
        if isinstance(value, dict) and value.get("action") is None:
            named = _token(value.get("failure_class"))
            if named in FailureClass._value2member_map_:
                return {**value, "action": DEFAULT_ACTION[FailureClass(named)]}
        return value


class AnswerError(ValueError):
    """The model's reply is not a valid answer; the message is what the model is told on retry."""


MAX_REPLY_CHARS = 32_000  # a valid answer is far shorter (max_output_tokens 1500 is ~6,000 characters)
FENCE = "```"


def check_size(text: str) -> None:
    """Refuse a reply longer than any valid answer before any work on it: a server may ignore max_tokens."""
    if len(text) > MAX_REPLY_CHARS:
        raise AnswerError(
            f"the reply is {len(text):,} characters, over the {MAX_REPLY_CHARS:,} an answer may take; "
            "reply with the JSON object only"
        )


def _candidates(text: str) -> Iterator[str]:
    """Each fenced block (a leading `json` tag dropped), then the outermost {...}: linear in the reply.

    Plain string splitting, not a regex: a fence pattern with `.*` between two searches backtracks over the
    rest of the reply at every fence, which is quadratic on a reply full of them.
    """
    for block in text.split(FENCE)[1:-1:2]:
        body = block.strip()
        body = body.removeprefix("json").lstrip() if body.startswith("json") else body
        if body.startswith("{") and body.endswith("}"):  # only what can be an object reaches the decoder
            yield body
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        yield text[start : end + 1]


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply: bare, fenced, or the outermost {...} in surrounding prose."""
    for candidate in _candidates(text):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise AnswerError("the reply holds no JSON object; answer with one JSON object that follows the schema")


def parse_answer(text: str, citeable: set[tuple[str, int]], nodes: set[str]) -> LLMAnswer:
    """Parse and check one reply. `citeable` and `nodes` are what the context showed (after restore)."""
    check_size(text)
    try:
        answer = LLMAnswer.model_validate(_json_object(text))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        raise AnswerError(f"{where}: {first['msg']}") from exc
    invented = [f"{c.file}:{c.line}" for c in answer.evidence if (c.file, c.line) not in citeable]
    if invented:
        raise AnswerError(
            f"evidence cites lines that are not in the logs shown: {', '.join(invented[:5])}; "
            "cite only [file:line] references from the context"
        )
    answer.faulty_nodes = [as_place(n) for n in answer.faulty_nodes]
    unknown = [n for n in answer.faulty_nodes if n not in nodes]
    if unknown:
        raise AnswerError(f"faulty_nodes names nodes the logs do not show: {', '.join(unknown[:5])}")
    return answer


ASKED_FOR = ("failure_class", "action", "evidence", "rationale")  # what the prompt asks every answer for


def answer_schema() -> dict[str, Any]:
    """The JSON schema of LLMAnswer, for response_format and for the prompt: the fields read leniently are still
    asked for."""
    schema = LLMAnswer.model_json_schema()
    schema["required"] = list(ASKED_FOR)
    return schema

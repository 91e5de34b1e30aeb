"""An exception no rule explains, read the way the labeled real failures read: the learned prior's verdict.

traceback_rules.py knows exceptions by what their message and frames say outright; what is left falls to a weak
code_bug. Before it does, the words of the message, the exception's type, the packages it went through and
where it was raised are put to the prior learned from the corpus (knowledge/exception_prior.py), which answers
only when it is nearly sure: a ValueError raised in transformers' argument checks reads like the settings
errors it was in real threads, an IndexError under a dataset's `__getitem__` like the bad records it was.
"""

from __future__ import annotations

import re

from crashcart.agent.traceback_findings import LEARNED, Finding
from crashcart.agent.traceback_frames import is_stdlib, is_user, raiser, short_type
from crashcart.knowledge.exception_prior import ExceptionPrior, load_prior
from crashcart.parsers.models import RaisedException, Traceback

SURE = 0.9  # the posterior it takes: in 5-fold cross-validation over the corpus' dev half, 0.87 right from here
MESSAGE_CHARS = 400  # of the message, read for words (a 10 kB repr of a batch says nothing more)
_WORD = re.compile(r"[A-Za-z][a-z]{2,}|[A-Z]{2,}")  # words and acronyms; numbers, ids and paths' digits left out


def features(exc: RaisedException, tb: Traceback) -> frozenset[str]:
    """What the prior reads of one exception: type and message words; with frames also the kind of traceback,
    the raiser and the packages it went through."""
    found = {f"type:{short_type(exc)}"}
    found.update(f"word:{w.lower()}" for w in _WORD.findall(exc.message[:MESSAGE_CHARS]))
    raised = raiser(exc.frames)
    if raised is None:  # a bare line: its type and words are all there is; marking it bare would pull every
        return frozenset(found)  # bare line towards the class whose excerpts are most often bare lines
    raiser_name = "user" if is_user(raised) else "std" if is_stdlib(raised) else str(raised.package)
    found.update((f"kind:{tb.kind}", f"raiser:{raiser_name}"))
    found.update(f"package:{f.package}" for f in exc.frames if f.package and f.package != "python")
    if tb.worker:
        found.add("kind:worker")
    return frozenset(found)


def learned(exc: RaisedException, tb: Traceback, prior: ExceptionPrior | None = None) -> Finding | None:
    """The prior's class for an exception nothing else explained, when it is sure of it. Never for one raised in
    the user's own code: that is the user's bug, as traceback_rules.py says. (A bare exception line, with no
    frames, is read; whether its reading counts is the caller's to say.)"""
    raised = raiser(exc.frames)
    if raised is not None and is_user(raised):
        return None
    reading = (prior or load_prior()).read(features(exc, tb))
    if reading is None or reading.probability < SURE:
        return None
    name = reading.failure_class.value.replace("_", " ")
    label = f"read like the real {name} failures it resembles (learned from {reading.cases} labeled cases)"
    return Finding("learned_reading", reading.failure_class, LEARNED, label)

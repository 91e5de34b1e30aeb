"""What a traceback rule concludes about one exception, and how strongly.

Priorities: specific signatures (>= 50) still decide where they fire; python.yaml's generic per-exception rules
(25-45) know only the exception's name, so a confident structural finding outranks them (46-49) and a weak one
(a bare RuntimeError, an exception nothing explains) stays among them (20-30), unless the prior learned from
labeled real failures reads it with near certainty (36: over the type-only signatures, under every other).
"""

from __future__ import annotations

from typing import NamedTuple

from crashcart.knowledge.taxonomy import FailureClass

CONFIDENT = 48  # the message names the cause: an errno, an allocator, a missing module, a version check
LIKELY = 47  # where it was raised tells: a library the user called, data loading, a config validator
OWN_CODE = 46  # raised in the user's own code about the user's own objects
# Nothing above knew it, and the prior learned from real failures is sure of it (exception_reading.py): above
# the signatures that know only the exception's type (at most 35), below every one that names a message family.
LEARNED = 36
WEAK = 25  # nothing telling: an exception of the user's code or of a library
BARE = 22  # a bare RuntimeError: whatever raised it said nothing more
SUMMARY = 20  # a launcher's summary of a child that failed (its own traceback tells why)


class Finding(NamedTuple):
    """What a rule concluded about one exception."""

    reason: str
    failure_class: FailureClass
    priority: int
    label: str

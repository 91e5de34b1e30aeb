"""Masking of the variable parts of a log line before templating, so Drain3 sees one shape per message.

The pass itself is native (`_masking.c`, which lists the alternatives it replaces and why it is C): a template
cache miss pays it once per new message shape, and a job of mostly distinct lines pays it on most of them.
"""

from __future__ import annotations

from crashcart.parsers._masking import mask

__all__ = ["mask"]

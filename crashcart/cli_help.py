"""Help that reads cleanly at 60 columns: click-style metavars instead of typer's `<bool>` / `<list[str]>` tags.

Typer 0.29 shows every parameter's Python type in angle brackets, and a long Choice (the 15 failure classes)
as one `<a|b|...>` word that the narrow type column then breaks mid-word. People copy option values from
help, so: flags show no type, a choice of a few short values shows them (`text|json|md`), a long one shows
its name (`CLASS`, the values listed in the option's help), numbers and paths read `INTEGER`, `PATH`.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption

from crashcart.knowledge.taxonomy import FailureClass

# The failure classes, for a --class option's help text: as a Choice metavar they would wrap mid-word.
CLASSES = ", ".join(c.value for c in FailureClass)
SHORT_CHOICES = 16  # a choice whose values fit in this many characters lists them in the type column
_NAMES = {"int": "INTEGER", "float": "FLOAT", "str": "TEXT", "bool": None}


def _metavar(param: TyperOption | TyperArgument, ctx: Any) -> str | None:
    """The short, copyable type label of one parameter (None: no label)."""
    if isinstance(param, TyperArgument) or getattr(param, "is_flag", False):
        return None  # an argument's name already says it; a flag takes no value
    if param.metavar is not None:
        return param.metavar
    desc = param.type_descriptor
    if desc.is_choice:
        label = _TYPED(param, ctx).strip("<>")
        if len(label) > SHORT_CHOICES:
            label = (param.name or "value").upper()
    elif desc.is_path:
        label = "PATH"
    else:
        bare = param.bare_type()
        label = _NAMES.get(bare, bare.upper()) or ""
    return f"{label}..." if param.nargs != 1 and label else label or None


_TYPED = TyperOption.display_type
_installed = False


def install() -> None:
    """Swap typer's type tags for click-style metavars in every help screen of this process (idempotent)."""
    global _installed
    if _installed:
        return
    TyperOption.display_type_rich = _metavar  # type: ignore[method-assign,assignment]
    TyperArgument.display_type_rich = _metavar  # type: ignore[method-assign,assignment]
    _installed = True

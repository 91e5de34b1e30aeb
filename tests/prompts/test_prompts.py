"""Every shipped prompt renders with all its variables filled, and a missing one is an error."""

import pytest

from crashcart import prompts


@pytest.mark.parametrize("name", prompts.names())
def test_each_prompt_renders_completely(name: str) -> None:
    import re
    import string

    text = (prompts.PROMPT_DIR / f"{name}.md").read_text()
    fields = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text)} - {None}
    out = prompts.render(name, **{f: f"<{f}>" for f in fields})
    assert not re.search(r"\$[A-Za-z_]", out)
    assert all(f"<{f}>" in out for f in fields)


def test_missing_value_and_unknown_name_are_errors() -> None:
    with pytest.raises(prompts.PromptError, match=r"needs a value for \$taxonomy"):
        prompts.render("diagnose")
    with pytest.raises(prompts.PromptError, match="no prompt named 'nope'"):
        prompts.render("nope")

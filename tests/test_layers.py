"""The house's layers point down: no module imports from a layer above its own.

knowledge (with prompts, both data and their loaders) <- parsers <- agent <- face (api, render, stores, batch,
bot) <- evals (measures through the face's API) <- the command line and the package root (which reach evals
for `crashcart eval` and `crashcart.evaluate`). Every import counts, lazy or under TYPE_CHECKING alike.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {
    "crashcart": "crashcart",
    "agent": "crashcart.agent",
    "parsers": "crashcart.parsers",
    "knowledge": "crashcart.knowledge",
    "evals": "crashcart.evals",
    "prompts": "crashcart.prompts",
}
LAYERS = {
    "crashcart.knowledge": 0,
    "crashcart.prompts": 0,
    "crashcart.parsers": 1,
    "crashcart.agent": 2,
    "crashcart.evals": 4,
}
FACE, TOP = 3, 5


def layer(module: str) -> int:
    """The layer of a crashcart module: its subpackage's, the top for the CLI and root, else the face's."""
    for package, level in LAYERS.items():
        if module == package or module.startswith(package + "."):
            return level
    name = module.split(".")[1] if "." in module else ""
    return TOP if name in ("", "cli") or name.startswith("cli_") else FACE


def modules() -> Iterator[tuple[str, Path]]:
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def is_module(name: str) -> bool:
    """Whether a dotted crashcart name is a module or package of the repository (not a name inside one)."""
    for folder, package in FOLDERS.items():
        if name == package or name.startswith(package + "."):
            rest = name[len(package) :].lstrip(".").split(".") if name != package else []
            base = REPO / folder / Path(*rest) if rest else REPO / folder
            if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
                return True
    return False


def imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in the file, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield node.lineno, full if is_module(full) else base


def test_the_map_knows_every_package() -> None:
    found = {m for m, _ in modules()}
    assert {
        "crashcart.cli",
        "crashcart.api",
        "crashcart.agent.pipeline",
        "crashcart.parsers.scan",
        "crashcart.knowledge.records",
        "crashcart.evals.runner",
    } <= found
    assert layer("crashcart.cli_cases") == TOP and layer("crashcart.bot.app") == FACE
    assert layer("crashcart.knowledge.errors") < layer("crashcart.parsers.models") < layer("crashcart.agent.cases")


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_no_import_points_up(module: str, path: Path) -> None:
    own = layer(module)
    upward = [
        f"{path.relative_to(REPO)}:{line} imports {target} (layer {layer(target)} above {own})"
        for line, target in imports(module, path)
        if (target.split(".")[0] in FOLDERS and target.split(".")[0] != "crashcart")
        or (target.startswith("crashcart") and layer(target) > own)
    ]
    assert not upward, "\n".join(upward)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The check itself can fail: a knowledge module that imports the agent is caught, a bare top-level name too."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from crashcart.agent.report import Report\nimport parsers.scan\ndef f():\n    from crashcart import cli\n",
        encoding="utf-8",
    )
    targets = [t for _, t in imports("crashcart.knowledge.bad", bad)]
    assert targets == ["crashcart.agent.report", "parsers.scan", "crashcart.cli"]
    assert [layer(t) for t in targets if t.startswith("crashcart")] == [2, TOP]

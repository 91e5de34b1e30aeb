"""crashcart/drain_exec.py: the operator's drain command, split once, filled with a node read off a log only when it
is a plain host name, run without a shell, once per node."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from crashcart.drain_exec import Drainer, drain_argv
from crashcart.knowledge.errors import InputError

# A command that writes its arguments, one a line, to a file: what really ran, with no shell in between.
RECORD = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(chr(10).join(sys.argv[2:]))"


def test_the_operators_command_runs_with_the_node_filled_in(tmp_path: Path) -> None:
    out = tmp_path / "argv.txt"
    template = shlex.join([sys.executable, "-c", RECORD, str(out)]) + " NodeName={node} 'Reason={reason}'"
    said: list[str] = []
    drainer = Drainer(drain_argv(template), said.append)
    future = drainer.drain("node02", "crashcart: gpu_hardware")
    assert future is not None
    future.result(timeout=30)
    drainer.close()
    assert out.read_text().splitlines() == ["NodeName=node02", "Reason=crashcart: gpu_hardware"]
    filled = [*drain_argv(template)[:4], "NodeName=node02", "Reason=crashcart: gpu_hardware"]
    assert said == [f"drain command ran: {shlex.join(filled)}"]


def test_each_node_is_drained_once_and_a_name_that_is_no_plain_host_never() -> None:
    ran: list[list[str]] = []
    said: list[str] = []

    def runner(argv: list[str], **kwargs: object) -> object:
        ran.append(argv)
        return type("Done", (), {"returncode": 1, "stderr": "scontrol: error: Invalid node name specified\n"})()

    drainer = Drainer(["scontrol", "update", "NodeName={node}", "State=DRAIN"], said.append, runner)
    first = drainer.drain("node02", "x")
    assert first is not None
    first.result(timeout=30)
    assert drainer.drain("node02", "x") is None
    assert drainer.drain("node02; reboot", "x") is None  # a host name read off a log that a shell would split
    drainer.close()
    assert ran == [["scontrol", "update", "NodeName=node02", "State=DRAIN"]]
    assert said == [
        "drain command exited 1 (scontrol update NodeName=node02 State=DRAIN):"
        " scontrol: error: Invalid node name specified",
        "not draining 'node02; reboot': not a plain host name",
    ]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("scontrol update State=DRAIN", "--drain-exec must hold {node}"),
        ("", "--drain-exec must hold {node}"),
        ("scontrol 'update", "--drain-exec: No closing quotation: quote it as a shell would"),
    ],
)
def test_a_command_that_cannot_drain_a_node_is_refused_at_start(template: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        drain_argv(template)

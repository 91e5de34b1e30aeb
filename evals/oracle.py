"""An oracle model: a local OpenAI-compatible server that answers like a perfect model, from a labeled set.

It names a case's labeled class and action when, and only when, the prompt shows one of that case's labeled
evidence lines (cited as the prompt cites it, `[file:line]`); otherwise it answers `unknown`. Against it,
`crashcart eval DIR --llm openai:oracle --llm-base-url URL` measures what the LLM layer can deliver without a
model: whether the context carries the decisive line (context recall), and whether the consult policy asks
where the rules are wrong. It listens on 127.0.0.1 only.

    python -m crashcart.evals.oracle DIR [--port 8765]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from crashcart.evals.dataset import LabeledCase, load_evalset
from crashcart.evals.metrics import normalise_ws

_CITED = re.compile(r"^\[(?P<file>[^\]\n]+):(?P<line>\d+)\](?: \([^)\n]*\))? (?P<text>.*)$", re.MULTILINE)


class Oracle:
    """The labeled evidence lines of a set, and the answer a perfect model gives a prompt."""

    def __init__(self, cases: list[LabeledCase]) -> None:
        self.lines = [(normalise_ws(line), case) for case in cases for line in case.evidence if line.strip()]
        self.lines.sort(key=lambda pair: -len(pair[0]))  # the most specific line first

    def answer(self, prompt: str) -> dict[str, Any]:
        shown = [(m["file"], int(m["line"]), normalise_ws(m["text"])) for m in _CITED.finditer(prompt)]
        for evidence, case in self.lines:
            for file, line, text in shown:
                if evidence in text:
                    return {
                        "failure_class": case.failure_class.value,
                        "action": case.action.value,
                        "evidence": [{"file": file, "line": line}],
                        "faulty_nodes": case.faulty_nodes,
                        "rationale": "the prompt shows the labeled evidence line",
                    }
        cite = [{"file": shown[0][0], "line": shown[0][1]}] if shown else []
        return {
            "failure_class": "unknown",
            "action": "escalate_infra",
            "evidence": cite,
            "faulty_nodes": [],
            "rationale": "no labeled evidence line is shown",
        }


class OracleServer:
    """The oracle over HTTP (/v1/chat/completions), in a background thread; a context manager."""

    def __init__(self, root: Path, port: int = 0) -> None:
        self.oracle = Oracle(load_evalset(Path(root)))
        self.requests = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> OracleServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests += 1
                prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
                text = json.dumps(server.oracle.answer(prompt))
                reply = {
                    "id": f"oracle-{server.requests}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "oracle"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": len(prompt) // 4,
                        "completion_tokens": len(text) // 4,
                        "total_tokens": (len(prompt) + len(text)) // 4,
                    },
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:  # quiet: the eval prints the figures
                return

        return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m crashcart.evals.oracle", description=__doc__.split("\n\n")[0])
    p.add_argument("root", type=Path, help="a labeled set: DIR/labels.jsonl")
    p.add_argument("--port", type=int, default=8765)
    args = p.parse_args(argv)
    try:
        server = OracleServer(args.root, args.port)
    except (OSError, ValueError) as exc:
        print(f"oracle: {exc}", file=sys.stderr)
        return 2
    print(f"oracle for {args.root} at {server.base_url} (Ctrl-C stops it)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

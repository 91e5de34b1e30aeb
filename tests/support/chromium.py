"""A real headless Chromium (Debian's `chromium`, installed by .ci/install-chromium.sh) for the HTML report tests:
how many of a page's elements the browser laid out with a size, and a screenshot.

The page is loaded in an iframe of a harness page whose script measures it after it loaded (the report itself
has no script); --allow-file-access-from-files lets the harness read a file:// frame.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

TIMEOUT_S = 120


def chromium() -> str:
    """The browser's path; the test skips, saying how to install it, where there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (run .ci/install-chromium.sh, or apt-get install chromium)")
    return found


def _run(*args: str) -> str:
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


_HARNESS = """<!DOCTYPE html><html><body><pre id="out">pending</pre>
<iframe id="page" src="{src}" width="1200" height="3000"></iframe>
<script>
const selectors = {selectors};
document.getElementById("page").addEventListener("load", () => {{
  const doc = document.getElementById("page").contentDocument;
  const out = {{}};
  for (const s of selectors) {{
    out[s] = Array.from(doc.querySelectorAll(s)).filter(e => {{
      const box = e.getBoundingClientRect();
      return box.width > 0 || box.height > 0;
    }}).length;
  }}
  out["scripts"] = doc.querySelectorAll("script").length;
  document.getElementById("out").textContent = JSON.stringify(out);
}});
</script></body></html>
"""


def drawn(page: Path, selectors: Sequence[str]) -> dict[str, int]:
    """For each CSS selector, how many matching elements of `page` Chromium laid out with a size (a line: a length)
    (and, under "scripts", how many script elements the page has)."""
    harness = page.with_name(page.stem + ".harness.html")
    harness.write_text(_HARNESS.format(src=page.name, selectors=json.dumps(list(selectors))))
    dom = _run("--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom", harness.as_uri())
    found = re.search(r'<pre id="out">([^<]*)</pre>', dom)
    assert found is not None and found.group(1) != "pending", dom[:2000]
    return json.loads(html.unescape(found.group(1)))


def screenshot(page: Path, out: Path, height: int = 2400) -> Path:
    """A PNG of the page's first `height` pixels, 1200 wide."""
    _run(f"--window-size=1200,{height}", f"--screenshot={out}", page.as_uri())
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return out

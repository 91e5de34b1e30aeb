#!/usr/bin/env bash
# Install Debian's Chromium so the HTML report tests (tests/crashcart/test_htmlreport_*.py) can open the
# reports in a real headless browser. Idempotent: does nothing when chromium is already there.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null

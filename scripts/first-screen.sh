#!/usr/bin/env bash
# Re-shoots docs/report-first-screen.png (the README's picture of REPORT.html's first screen) from
# results/reference/REPORT.html with headless Chromium (Debian's `chromium` package).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "first-screen: install Debian's chromium (apt-get install chromium)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# No background networking: this machine's closed network refuses Chromium's own connections.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --window-size=1400,900 \
    --screenshot="$PWD/docs/report-first-screen.png" "file://$PWD/results/reference/REPORT.html" 2>/dev/null
echo "first-screen: docs/report-first-screen.png re-shot; look at it before committing" >&2

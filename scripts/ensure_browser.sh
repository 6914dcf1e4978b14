#!/bin/sh
# Make sure a Chromium for the browser tests (tests/test_browser.py) is installed.
#
# The tests drive Debian's `chromium` package through Playwright (a Playwright browser download
# is not possible on these machines). Called by `make test`; never fails the build: when no
# browser can be installed (not root, no apt-get, no package), it says so and the browser tests
# skip with that reason.
#   SPECNB_CHROMIUM=/path/to/chrome   use that browser instead (nothing is installed)
#   SPECNB_NO_BROWSER_INSTALL=1        never install anything
set -u

browser="${SPECNB_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$browser" ]; then
    exit 0
fi
if [ -n "${SPECNB_CHROMIUM:-}" ]; then
    echo "ensure_browser: SPECNB_CHROMIUM=$SPECNB_CHROMIUM is not an executable; browser tests will skip" >&2
    exit 0
fi
if [ "${SPECNB_NO_BROWSER_INSTALL:-0}" != "0" ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_browser: $browser missing and cannot install it (needs root and apt-get);" \
         "browser tests will skip. Install Debian's chromium package to run them." >&2
    exit 0
fi

echo "ensure_browser: installing Debian's chromium for the browser tests (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
# Try the current package lists first; refresh them only if that fails.
if ! apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1; then
    apt-get update -q >/dev/null 2>&1
    if ! apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null; then
        echo "ensure_browser: apt-get install chromium failed; browser tests will skip" >&2
        exit 0
    fi
fi
if [ -x "$browser" ]; then
    echo "ensure_browser: installed $browser" >&2
else
    echo "ensure_browser: the chromium package did not provide $browser; browser tests will skip" >&2
fi
exit 0

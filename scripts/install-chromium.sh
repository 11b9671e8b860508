#!/usr/bin/env bash
# Make sure Debian's chromium is installed for the browser tests (tests/web), which drive it
# headless with Playwright (Playwright's own browser downloads are never used).
#   scripts/install-chromium.sh   -> exit 0 when /usr/bin/chromium is there (installed now or before)
# Installs with apt-get as root, or through `sudo -n` when that works without a password.
# When it cannot, it says why on stderr and exits 1; the browser tests are then skipped
# loudly (or fail, under CI=true).
set -uo pipefail

CHROMIUM=${MANDALA_CHROMIUM:-/usr/bin/chromium}

[ -x "$CHROMIUM" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    echo "install-chromium: $CHROMIUM is missing and neither root nor password-less sudo can install it" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: $CHROMIUM is missing and there is no apt-get to install Debian's chromium" >&2
    exit 1
fi
echo "installing Debian's chromium package for the browser tests…" >&2
("${as_root[@]}" apt-get update -qq && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2
[ -x "$CHROMIUM" ] || { echo "install-chromium: chromium did not install" >&2; exit 1; }

#!/usr/bin/env bash
# Make sure one of Debian's packages is installed, for the tests that need its program:
#   scripts/install-package.sh PACKAGE PROGRAM   -> exit 0 when PROGRAM is there (installed now or before)
# `make test` asks for chromium (/usr/bin/chromium: the browser tests in tests/web drive it
# headless with Playwright; Playwright's own browser downloads are never used) and haproxy
# (/usr/sbin/haproxy: the cluster's chaos test puts its nodes behind it).
# Installs with apt-get as root, or through `sudo -n` when that works without a password.
# When it cannot, it says why on stderr and exits 1; the tests that need it are then skipped
# loudly (or fail, under CI=true).
set -uo pipefail

PACKAGE=${1:?usage: install-package.sh PACKAGE PROGRAM}
PROGRAM=${2:?usage: install-package.sh PACKAGE PROGRAM}

[ -x "$PROGRAM" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    echo "install-package: $PROGRAM is missing and neither root nor password-less sudo can install $PACKAGE" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-package: $PROGRAM is missing and there is no apt-get to install Debian's $PACKAGE" >&2
    exit 1
fi
echo "installing Debian's $PACKAGE package for the tests…" >&2
("${as_root[@]}" apt-get update -qq && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$PACKAGE") >&2
[ -x "$PROGRAM" ] || { echo "install-package: $PACKAGE did not install $PROGRAM" >&2; exit 1; }

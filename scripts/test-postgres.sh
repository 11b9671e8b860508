#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL server on loopback for the storage tests.
#   scripts/test-postgres.sh start   -> prints the postgresql:// URL on stdout
#   scripts/test-postgres.sh stop    -> stops it and removes its data
#   scripts/test-postgres.sh halt    -> stops it, keeping its data (`start` brings it back as it was)
# MANDALA_PG_PORT chooses another instance, in a directory of its own unless MANDALA_PG_DIR names
# one (the storage-fault tests run their own; two checkouts on two ports do not touch each other's);
# MANDALA_PG_DURABLE=1 starts it with fsync on (make load-cluster DURABLE=1).
# Installs Debian's postgresql package when no server binaries are found and we are root.
# Anything that prevents a server from starting is reported on stderr; `start` then
# prints nothing and exits 1, and the tests say loudly that the PostgreSQL leg is skipped.
set -uo pipefail

PORT=${MANDALA_PG_PORT:-15432}  # below the ephemeral range (32768-60999): no client socket can hold it
DIR=${MANDALA_PG_DIR:-/tmp/mandala-test-pg-$PORT}
RUN_AS=postgres

find_bin() {
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
    done
    command -v pg_ctl >/dev/null 2>&1 && { dirname "$(command -v pg_ctl)"; return 0; }
    return 1
}

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$RUN_AS" -- "$@"; else "$@"; fi
}

start() {
    local bin
    if ! bin=$(find_bin); then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "installing Debian's postgresql package for the storage tests…" >&2
            (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2 || true
        fi
        bin=$(find_bin) || { echo "no PostgreSQL server binaries and none could be installed" >&2; exit 1; }
    fi
    if [ "$(id -u)" = 0 ] && ! id "$RUN_AS" >/dev/null 2>&1; then
        useradd --system --no-create-home "$RUN_AS" >&2 || { echo "cannot create user $RUN_AS" >&2; exit 1; }
    fi
    if [ "$(id -u)" != 0 ]; then RUN_AS=$(id -un); fi
    if as_owner "$bin/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
        echo "postgresql://mandala@127.0.0.1:$PORT/mandala"
        return 0
    fi
    if [ -f "$DIR/data/PG_VERSION" ] && [ -f "$DIR/created" ]; then
        # Halted earlier: back with its data. A start that fails here (its port taken, a long
        # recovery) leaves the data as it is: it holds a cluster's whole history.
        pg_start "$bin" || { echo "postgres did not start on its data in $DIR/data (kept): $(tail -n 5 "$DIR/server.log")" >&2; exit 1; }
        echo "postgresql://mandala@127.0.0.1:$PORT/mandala"
        return 0
    fi
    rm -rf "$DIR"  # nothing, or an initialisation cut short: made afresh
    mkdir -p "$DIR"
    chown "$RUN_AS" "$DIR" 2>/dev/null || true
    as_owner "$bin/initdb" -D "$DIR/data" -U mandala --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1 \
        || { echo "initdb failed: $(tail -n 5 "$DIR/initdb.log")" >&2; exit 1; }
    pg_start "$bin" || { echo "postgres did not start: $(tail -n 5 "$DIR/server.log")" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$PORT" -U mandala mandala >&2 \
        || { echo "createdb failed" >&2; exit 1; }
    touch "$DIR/created"
    echo "postgresql://mandala@127.0.0.1:$PORT/mandala"
}

pg_start() {
    # A throwaway server need not survive a power cut; MANDALA_PG_DURABLE=1 keeps PostgreSQL's
    # own defaults (every commit flushed to disk), for measuring what durability costs.
    local fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${MANDALA_PG_DURABLE:-}" = 1 ] && fast=""
    as_owner "$1/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 \
        -o "-h 127.0.0.1 -p $PORT -k $DIR $fast" start >&2
}

halt() {
    local bin
    bin=$(find_bin) || exit 1
    [ "$(id -u)" != 0 ] && RUN_AS=$(id -un)
    as_owner "$bin/pg_ctl" -D "$DIR/data" -m fast -w stop >&2
}

stop() {
    local bin
    bin=$(find_bin) || exit 0
    [ -d "$DIR/data" ] || exit 0
    [ "$(id -u)" != 0 ] && RUN_AS=$(id -un)
    as_owner "$bin/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    halt) halt ;;
    *) echo "usage: $0 start|stop|halt" >&2; exit 2 ;;
esac

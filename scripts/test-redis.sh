#!/usr/bin/env bash
# Start (or stop) a throwaway Redis server on loopback for the cluster tests.
#   scripts/test-redis.sh start   -> prints the redis:// URL on stdout
#   scripts/test-redis.sh stop    -> stops it and removes its files
# MANDALA_REDIS_PORT chooses another instance, in a directory of its own unless MANDALA_REDIS_DIR
# names one (two checkouts on two ports do not touch each other's).
# Installs Debian's redis-server package when no server binary is found and we are root.
# Anything that prevents a server from starting is reported on stderr; `start` then prints
# nothing and exits 1, and the tests say loudly that the cluster tests are skipped.
set -uo pipefail

PORT=${MANDALA_REDIS_PORT:-16379}  # below the ephemeral range (32768-60999): no client socket can hold it
DIR=${MANDALA_REDIS_DIR:-/tmp/mandala-test-redis-$PORT}
URL="redis://127.0.0.1:$PORT/0"

find_bin() {
    command -v redis-server 2>/dev/null || { [ -x /usr/bin/redis-server ] && echo /usr/bin/redis-server; }
}

ping() {
    command -v redis-cli >/dev/null 2>&1 && redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG
}

start() {
    local bin
    if ! bin=$(find_bin); then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "installing Debian's redis-server package for the cluster tests…" >&2
            (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >&2 || true
        fi
        bin=$(find_bin) || { echo "no redis-server binary and none could be installed" >&2; exit 1; }
    fi
    if ping; then
        echo "$URL"
        return 0
    fi
    rm -rf "$DIR"
    mkdir -p "$DIR"
    # Nothing is kept on disk: the tests start from an empty server.
    "$bin" --port "$PORT" --bind 127.0.0.1 --dir "$DIR" --save "" --appendonly no \
        --daemonize yes --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" >&2 \
        || { echo "redis-server did not start" >&2; exit 1; }
    for _ in $(seq 1 100); do
        if ping; then
            echo "$URL"
            return 0
        fi
        sleep 0.05
    done
    echo "redis-server did not answer: $(tail -n 5 "$DIR/redis.log" 2>/dev/null)" >&2
    exit 1
}

stop() {
    local pid
    if pid=$(cat "$DIR/redis.pid" 2>/dev/null); then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
    fi
    rm -rf "$DIR"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac

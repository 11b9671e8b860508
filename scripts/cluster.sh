#!/usr/bin/env bash
# A Mandala Arena cluster on this machine: PostgreSQL, Redis, three nodes and HAProxy in front.
#   scripts/cluster.sh start    -> starts what is not running, waits until it answers, prints
#                                  the one address to use and the admin token
#   CLUSTER_TLS=1 scripts/cluster.sh start   (make cluster TLS=1) -> the same address serves
#                                  https:// and wss://: a local certificate authority is made
#                                  once (STATE/tls/ca.pem, printed: the clients' --ca-file) with a
#                                  certificate for the address; HAProxy terminates TLS, the nodes
#                                  stay plain on loopback and take tokens only by TLS from afar
#   scripts/cluster.sh stop     -> stops HAProxy, the nodes, Redis and PostgreSQL; the database
#                                  is kept, so the next start has the same bots and ladder
#   scripts/cluster.sh status   -> what runs; exit 0 when everything does, 3 when not
#   scripts/cluster.sh clean    -> stop, then delete the database and the state directory
#
# PostgreSQL and Redis come from scripts/test-postgres.sh and scripts/test-redis.sh (each
# installs Debian's package when missing and we are root), on instances and ports of their
# own, not the tests'. PostgreSQL there runs with fsync off and Redis keeps nothing on disk:
# a cluster for trying things out, not for keeping games through a power cut. HAProxy runs
# deploy/haproxy.cfg as it is (Debian's haproxy is installed when missing and we are root).
#
# Settings (environment):
#   CLUSTER_HOST (127.0.0.1), CLUSTER_PORT (8080)  where HAProxy listens: the one address
#   CLUSTER_NODE_PORT (8081)        node1 listens there, node2 and node3 on the next two ports
#   CLUSTER_STATS_PORT (8404)       HAProxy's statistics page, on 127.0.0.1
#   CLUSTER_PG_PORT (55433), CLUSTER_PG_DIR (/tmp/mandala-cluster-pg: the postgres user must
#                                   reach it, and the work tree may be private)
#   CLUSTER_REDIS_PORT (56380), CLUSTER_REDIS_DIR (STATE/redis)
#   CLUSTER_DIR (.cluster)          STATE: pid files, logs, spools, the admin token
#   CLUSTER_WAIT (60)               seconds to wait for each part to answer
#   MANDALA_ADMIN_TOKEN             the admin token of every node (default: generated once,
#                                   kept in STATE/admin-token)
#   MANDALA_LOG_LEVEL               passed on to the nodes
#   CLUSTER_TLS (empty)             1: HTTPS and WSS (above); needs openssl
#   CLUSTER_TLS_CERT                with CLUSTER_TLS=1: a PEM file of your own (certificate, chain and
#                                   key, as HAProxy takes it) instead of the local authority's
# Progress goes to stderr, the addresses to stdout. Any failure is reported on stderr with
# exit status 1; what had started keeps running (see its log; `stop` stops it).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${CLUSTER_DIR:-$ROOT/.cluster}
HOST=${CLUSTER_HOST:-127.0.0.1}
PORT=${CLUSTER_PORT:-8080}
NODE_PORT=${CLUSTER_NODE_PORT:-8081}
STATS_PORT=${CLUSTER_STATS_PORT:-8404}
PG_PORT=${CLUSTER_PG_PORT:-55433}
PG_DIR=${CLUSTER_PG_DIR:-/tmp/mandala-cluster-pg}
REDIS_PORT=${CLUSTER_REDIS_PORT:-56380}
REDIS_DIR=${CLUSTER_REDIS_DIR:-$STATE/redis}
WAIT=${CLUSTER_WAIT:-60}
TLS=${CLUSTER_TLS:-}
TLS_DIR=$STATE/tls
OWN_CERT=${CLUSTER_TLS_CERT:-}
MANDALA=$ROOT/.venv/bin/mandala
HAPROXY_CFG=$ROOT/deploy/haproxy.cfg
NODES=(node1 node2 node3)

HINT=
die() { echo "cluster.sh: $*$HINT" >&2; exit 1; }
say() { echo "$*" >&2; }

for v in PORT NODE_PORT STATS_PORT PG_PORT REDIS_PORT WAIT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "CLUSTER_$v must be a number, not '${!v}'"
done

node_port() { echo $((NODE_PORT + $1)); }  # the i-th node (from 0)

# The address to show: a wildcard bind is reached on loopback from here.
SHOW_HOST=$HOST
case $HOST in 0.0.0.0 | "" | "*" | "::") SHOW_HOST=127.0.0.1 ;; esac

# pid in FILE if that process is alive and its command line has PATTERN (a reused pid is not ours).
live_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" || return 1
    echo "$pid"
}

listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

http_code() {  # the status code of GET URL, 000 when nothing answers (https: checked with our CA)
    local ca=()
    [[ $1 == https://* && -z $OWN_CERT && -s $TLS_DIR/ca.pem ]] && ca=(--cacert "$TLS_DIR/ca.pem")
    curl -s -o /dev/null -m 3 -w '%{http_code}' "${ca[@]}" "$1" 2>/dev/null || true
}

tls_on() { [[ $TLS == 1 || $TLS == yes || $TLS == true ]]; }

# The local certificate authority (made once, so clients keep one CA file) and a certificate
# for the one address (made again when the address changes); HAProxy's file is both with the key.
tls_files() {
    if [ -n "$OWN_CERT" ]; then
        [ -r "$OWN_CERT" ] || die "CLUSTER_TLS_CERT=$OWN_CERT cannot be read"
        return 0
    fi
    command -v openssl >/dev/null 2>&1 || die "openssl is needed for CLUSTER_TLS=1 (apt-get install openssl)"
    { mkdir -p "$TLS_DIR" && chmod 700 "$TLS_DIR"; } || die "cannot create $TLS_DIR"
    local san
    if [[ $SHOW_HOST =~ ^[0-9.]+$ || $SHOW_HOST == *:* ]]; then san="IP:$SHOW_HOST"; else san="DNS:$SHOW_HOST"; fi
    [ "$SHOW_HOST" = 127.0.0.1 ] && san="$san,DNS:localhost"
    if [ ! -s "$TLS_DIR/ca.pem" ] || [ ! -s "$TLS_DIR/ca.key" ]; then
        say "making a local certificate authority in $TLS_DIR…"
        (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
            -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.pem" -subj "/CN=Mandala Arena local CA" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign") \
            >/dev/null 2>&1 || die "openssl could not make the certificate authority"
        rm -f "$TLS_DIR/server.pem"
    fi
    if [ ! -s "$TLS_DIR/haproxy.pem" ] || [ "$(cat "$TLS_DIR/address" 2>/dev/null)" != "$san" ]; then
        say "making a certificate for $SHOW_HOST ($san)…"
        (umask 077 && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TLS_DIR/server.key" \
            -out "$TLS_DIR/server.csr" -subj "/CN=$SHOW_HOST" \
            && printf 'subjectAltName=%s\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
                "$san" >"$TLS_DIR/server.ext" \
            && openssl x509 -req -in "$TLS_DIR/server.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" \
                -CAcreateserial -days 825 -sha256 -extfile "$TLS_DIR/server.ext" -out "$TLS_DIR/server.pem" \
            && cat "$TLS_DIR/server.pem" "$TLS_DIR/server.key" >"$TLS_DIR/haproxy.pem") \
            >/dev/null 2>&1 || die "openssl could not make the certificate for $SHOW_HOST"
        echo "$san" >"$TLS_DIR/address"
    fi
}

pg_url() { echo "postgresql://mandala@127.0.0.1:$PG_PORT/mandala"; }
redis_url() { echo "redis://127.0.0.1:$REDIS_PORT/0"; }

pg() { MANDALA_PG_DIR=$PG_DIR MANDALA_PG_PORT=$PG_PORT "$ROOT/scripts/test-postgres.sh" "$@"; }
redis() { MANDALA_REDIS_DIR=$REDIS_DIR MANDALA_REDIS_PORT=$REDIS_PORT "$ROOT/scripts/test-redis.sh" "$@"; }

# deploy/haproxy.cfg reads these (each has the same default there; CLUSTER_TLS_CERT turns TLS on).
haproxy_env() {
    export CLUSTER_HOST=$HOST CLUSTER_PORT=$PORT CLUSTER_STATS_HOST=127.0.0.1 CLUSTER_STATS_PORT=$STATS_PORT
    if tls_on; then
        export CLUSTER_TLS_CERT=${OWN_CERT:-$TLS_DIR/haproxy.pem}
    else
        unset CLUSTER_TLS_CERT
    fi
    local i
    for i in "${!NODES[@]}"; do export "CLUSTER_NODE$((i + 1))=127.0.0.1:$(node_port "$i")"; done
}

find_haproxy() {
    command -v haproxy 2>/dev/null || { [ -x /usr/sbin/haproxy ] && echo /usr/sbin/haproxy; }
}

admin_token() {
    if [ -n "${MANDALA_ADMIN_TOKEN:-}" ]; then
        echo "$MANDALA_ADMIN_TOKEN"
        return 0
    fi
    if [ ! -s "$STATE/admin-token" ]; then
        (umask 077 && od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >"$STATE/admin-token") \
            || die "cannot write $STATE/admin-token"
    fi
    cat "$STATE/admin-token"
}

# Wait until URL answers one of the status codes in CODES (e.g. "200 503"), while PID lives.
wait_http() {
    local url=$1 codes=$2 pid=$3 log=$4 code deadline=$((SECONDS + WAIT))
    while [ $SECONDS -lt $deadline ]; do
        code=$(http_code "$url")
        if [[ " $codes " == *" $code "* ]]; then
            echo "$code"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || die "$url: the process stopped; the end of $log:
$(tail -n 15 "$log" 2>/dev/null)"
        sleep 0.2
    done
    die "$url did not answer in ${WAIT}s (last status $code); the end of $log:
$(tail -n 15 "$log" 2>/dev/null)"
}

start() {
    [ -x "$MANDALA" ] || die "$MANDALA is missing: run \`make cluster\` (it installs .venv first)"
    command -v curl >/dev/null 2>&1 || die "curl is needed to check that the nodes answer"
    mkdir -p "$STATE" || die "cannot create $STATE"
    local token db redis_u i name port pid log haproxy code scheme=http wscheme=ws mode=plain running
    local -a secure=()
    if tls_on; then
        scheme=https wscheme=wss mode=tls secure=(--require-tls)
    fi
    if live_pid "$STATE/haproxy.pid" haproxy >/dev/null; then
        running=$(cat "$STATE/haproxy.mode" 2>/dev/null || echo plain)
        [ "$running" = "$mode" ] || die "the running cluster serves $running HTTP, not $mode: \`make cluster-stop\` first"
    fi
    # The ports of what is not running yet must be free, before anything starts.
    for i in "${!NODES[@]}"; do
        live_pid "$STATE/${NODES[$i]}.pid" "mandala serve" >/dev/null && continue
        port=$(node_port "$i")
        ! listening 127.0.0.1 "$port" || die "port $port (for ${NODES[$i]}) is taken by another program: set CLUSTER_NODE_PORT"
    done
    if ! live_pid "$STATE/haproxy.pid" haproxy >/dev/null; then
        ! listening "$SHOW_HOST" "$PORT" || die "port $PORT is taken by another program: set CLUSTER_PORT"
        ! listening 127.0.0.1 "$STATS_PORT" || die "port $STATS_PORT is taken by another program: set CLUSTER_STATS_PORT"
    fi
    HINT=$'\n'"(what had started still runs: scripts/cluster.sh status shows it, scripts/cluster.sh stop stops it)"
    # Each WebSocket is an open file on a node and two in HAProxy: take as many as allowed.
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    token=$(admin_token) || exit 1
    if tls_on; then tls_files || exit 1; fi

    say "PostgreSQL on 127.0.0.1:$PG_PORT ($PG_DIR)…"
    db=$(pg start) || db=
    [ -n "$db" ] || die "PostgreSQL did not start (scripts/test-postgres.sh said why above)"
    say "Redis on 127.0.0.1:$REDIS_PORT…"
    redis_u=$(redis start) || redis_u=
    [ -n "$redis_u" ] || die "Redis did not start (scripts/test-redis.sh said why above)"

    # The nodes start together (one of them migrates the schema; the others wait on its lock).
    for i in "${!NODES[@]}"; do
        name=${NODES[$i]}
        port=$(node_port "$i")
        log=$STATE/$name.log
        if pid=$(live_pid "$STATE/$name.pid" "mandala serve"); then
            say "$name already running (pid $pid)"
            continue
        fi
        say "$name on 127.0.0.1:$port…"
        # Each node has a spool of its own (finished games waiting while PostgreSQL fails):
        # a spool is never shared between nodes. setsid: a Ctrl-C meant for this script (or
        # make) does not reach the nodes; nohup: nor does closing the terminal. The log is
        # appended to: what a node that died wrote stays there after it is started again.
        echo "---- $(date -u +%Y-%m-%dT%H:%M:%SZ) $name started by cluster.sh" >>"$log"
        MANDALA_ADMIN_TOKEN=$token setsid nohup "$MANDALA" serve --db "$db" --redis "$redis_u" --node "$name" \
            --host 127.0.0.1 --port "$port" --spool "$STATE/$name.spool" --trust-forwarded-for "${secure[@]}" \
            </dev/null >>"$log" 2>&1 &
        echo $! >"$STATE/$name.pid"
    done
    for i in "${!NODES[@]}"; do
        name=${NODES[$i]}
        pid=$(cat "$STATE/$name.pid")
        code=$(wait_http "http://127.0.0.1:$(node_port "$i")/health" "200 503" "$pid" "$STATE/$name.log") || exit 1
        [ "$code" = 503 ] && say "$name answers, but degraded: its storage fails (GET /health says why)"
    done

    haproxy_env
    if pid=$(live_pid "$STATE/haproxy.pid" haproxy); then
        say "HAProxy already running (pid $pid)"
    else
        if ! haproxy=$(find_haproxy); then
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
                say "installing Debian's haproxy package…"
                (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy) >&2 || true
            fi
            haproxy=$(find_haproxy) || die "no haproxy and none could be installed (apt-get install haproxy, as root)"
        fi
        # Debian's package may have started its own service on /etc/haproxy/haproxy.cfg; it
        # does not listen on our ports, so it is left alone.
        "$haproxy" -c -q -f "$HAPROXY_CFG" >&2 || die "$HAPROXY_CFG is not valid (haproxy -c said why above)"
        say "HAProxy on $HOST:$PORT…"
        echo "---- $(date -u +%Y-%m-%dT%H:%M:%SZ) HAProxy started by cluster.sh" >>"$STATE/haproxy.log"
        setsid nohup "$haproxy" -db -f "$HAPROXY_CFG" </dev/null >>"$STATE/haproxy.log" 2>&1 &
        echo $! >"$STATE/haproxy.pid"
        echo "$mode" >"$STATE/haproxy.mode"
    fi
    pid=$(cat "$STATE/haproxy.pid")
    wait_http "$scheme://$SHOW_HOST:$PORT/health" "200 503" "$pid" "$STATE/haproxy.log" >/dev/null || exit 1

    local rel=${STATE#"$ROOT"/} kept
    if [ -n "${MANDALA_ADMIN_TOKEN:-}" ]; then kept="MANDALA_ADMIN_TOKEN's"; else kept="kept in $rel/admin-token"; fi
    cat <<EOF
Mandala Arena cluster: ${#NODES[@]} nodes behind HAProxy, one address for everything:
  $scheme://$SHOW_HOST:$PORT/        the page and the HTTP API
  $wscheme://$SHOW_HOST:$PORT/ws        bots connect here
$(tls_note "$scheme")

Admin token (every node's; $kept):
  $token

  nodes:      $(for i in "${!NODES[@]}"; do printf '%s 127.0.0.1:%s' "${NODES[$i]}" "$(node_port "$i")"; [ "$i" -lt $((${#NODES[@]} - 1)) ] && printf ', '; done)
  PostgreSQL: $db
  Redis:      $redis_u
  HAProxy:    http://127.0.0.1:$STATS_PORT/ (statistics)
  logs:       $rel/*.log
  status:     scripts/cluster.sh status      stop: make cluster-stop
EOF
}

# With TLS from the local certificate authority: where its CA file is, for the clients.
tls_note() {
    tls_on && [ -z "$OWN_CERT" ] || return 0
    cat <<NOTE

TLS: HAProxy's certificate is signed by a local certificate authority; its CA file, for the clients:
  $TLS_DIR/ca.pem
  export MANDALA_CA_FILE=$TLS_DIR/ca.pem   (mandala-bot, the mandala command, the Node.js bot; or --ca-file)
  curl --cacert $TLS_DIR/ca.pem $1://$SHOW_HOST:$PORT/health
NOTE
}

# SIGTERM to each pid, then wait up to N seconds for all; SIGKILL what is left.
terminate() {
    local secs=$1 pid deadline
    shift
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null
    deadline=$((SECONDS + secs))
    for pid in "$@"; do
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            say "pid $pid did not stop in ${secs}s: killing it"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
}

stop() {
    local pid name pg_pid
    local -a pids=()
    # HAProxy first (no new traffic), then the nodes (each ends its running games and says so
    # to storage and Redis), then Redis and PostgreSQL.
    if pid=$(live_pid "$STATE/haproxy.pid" haproxy); then
        say "stopping HAProxy (pid $pid)"
        terminate 10 "$pid"
    fi
    rm -f "$STATE/haproxy.pid" "$STATE/haproxy.mode"
    for name in "${NODES[@]}"; do
        if pid=$(live_pid "$STATE/$name.pid" "mandala serve"); then
            say "stopping $name (pid $pid)"
            pids+=("$pid")
        fi
        rm -f "$STATE/$name.pid"
    done
    terminate 30 "${pids[@]}"
    if [ -f "$REDIS_DIR/redis.pid" ]; then
        say "stopping Redis"
        redis stop
    fi
    pg_pid=$(head -n 1 "$PG_DIR/data/postmaster.pid" 2>/dev/null) || pg_pid=
    if [[ $pg_pid =~ ^[0-9]+$ ]] && kill -0 "$pg_pid" 2>/dev/null; then
        say "stopping PostgreSQL (its data stays in $PG_DIR; \`scripts/cluster.sh clean\` deletes it)"
        pg halt >/dev/null || die "PostgreSQL did not stop"
    fi
    return 0
}

clean() {
    stop
    pg stop
    redis stop
    rm -rf "$STATE"
    say "deleted the database ($PG_DIR) and $STATE"
}

status() {
    local ok=0 pid name i port code pg_pid
    pg_pid=$(head -n 1 "$PG_DIR/data/postmaster.pid" 2>/dev/null) || pg_pid=
    if [[ $pg_pid =~ ^[0-9]+$ ]] && kill -0 "$pg_pid" 2>/dev/null; then
        echo "postgresql  running  pid $pg_pid  $(pg_url)"
    else
        echo "postgresql  stopped"; ok=3
    fi
    if pid=$(live_pid "$REDIS_DIR/redis.pid" redis-server); then
        echo "redis       running  pid $pid  $(redis_url)"
    else
        echo "redis       stopped"; ok=3
    fi
    for i in "${!NODES[@]}"; do
        name=${NODES[$i]}
        port=$(node_port "$i")
        if pid=$(live_pid "$STATE/$name.pid" "mandala serve"); then
            code=$(http_code "http://127.0.0.1:$port/health")
            case $code in
                200) echo "$name       running  pid $pid  http://127.0.0.1:$port  health ok" ;;
                503) echo "$name       running  pid $pid  http://127.0.0.1:$port  health degraded (GET /health says why)" ;;
                *) echo "$name       running  pid $pid  http://127.0.0.1:$port  not answering (status $code)"; ok=3 ;;
            esac
        else
            echo "$name       stopped"; ok=3
        fi
    done
    if pid=$(live_pid "$STATE/haproxy.pid" haproxy); then
        if [ "$(cat "$STATE/haproxy.mode" 2>/dev/null)" = tls ]; then
            echo "haproxy     running  pid $pid  https://$SHOW_HOST:$PORT  wss://$SHOW_HOST:$PORT/ws  (CA file: $TLS_DIR/ca.pem)"
        else
            echo "haproxy     running  pid $pid  http://$SHOW_HOST:$PORT  ws://$SHOW_HOST:$PORT/ws"
        fi
        # Each node as HAProxy sees it (its health check), from the statistics page's CSV.
        # CSV columns: 0 pxname, 1 svname, 4 scur (current sessions), 17 status.
        curl -s -m 3 "http://127.0.0.1:$STATS_PORT/;csv" 2>/dev/null | while IFS=, read -r -a f; do
            [[ ${f[0]} == mandala_ws && ${f[1]} == node* ]] || continue
            echo "  haproxy sees ${f[1]} ${f[17]:-?}, ${f[4]:-?} WebSockets"
        done
    else
        echo "haproxy     stopped"; ok=3
    fi
    return $ok
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    clean) clean ;;
    *) echo "usage: $0 start|stop|status|clean" >&2; exit 2 ;;
esac

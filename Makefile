# Mandala Arena. `make run` starts the server, `make test` runs every test.
# Each target creates or updates .venv by itself.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
HOST   ?= 127.0.0.1
PORT   ?= 8080
DB     ?= mandala.db

.PHONY: run test lint bench bench-env bench-history bench-ladder load load-cluster schema demo clean cluster cluster-stop

# pip -qq: errors only (not setuptools' note that an editable install is one, nor warnings about
# this machine's package indexes); a failed install still says why and stops make.
# Two distributions, both editable: the bot author's (clients/python: the engine, the message
# types, the client) and the arena's (the server and the `mandala` command), which depends on it.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -qq --disable-pip-version-check -e clients/python -e '.[test]'
	@# A .venv made before the split: replacing the old arena removed the mandala-bot it had installed.
	test -x $(VENV)/bin/mandala-bot || $(PY) -m pip install -qq --disable-pip-version-check --no-deps --force-reinstall -e clients/python
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/mandala serve --host $(HOST) --port $(PORT) --db $(DB)

# A throwaway PostgreSQL (scripts/test-postgres.sh) for the storage tests' PostgreSQL leg and a
# throwaway Redis (scripts/test-redis.sh) for the cluster tests; if one cannot start, its tests
# are skipped loudly (they fail under CI=true). Both are stopped whatever pytest's outcome, and
# pytest's exit status is kept. Debian's chromium for the browser tests and haproxy for the
# cluster's chaos test (scripts/install-package.sh). The tests run on TEST_JOBS workers (pytest-xdist),
# three even on two cores: most of a test's time is spent waiting on the servers it starts, kills
# and restarts (TEST_JOBS=0 runs them in this process, one after another).
TEST_JOBS ?= 3
test: $(STAMP) lint
	@scripts/install-package.sh chromium $${MANDALA_CHROMIUM:-/usr/bin/chromium} || echo "make test: chromium is missing; the browser tests will be skipped" >&2; \
	scripts/install-package.sh haproxy /usr/sbin/haproxy || echo "make test: haproxy is missing; the chaos test will be skipped" >&2; \
	url=$$(scripts/test-postgres.sh start) || url=; \
	if [ -n "$$url" ]; then export MANDALA_TEST_DATABASE_URL="$$url"; \
	else echo "make test: PostgreSQL did not start; the PostgreSQL storage tests will be skipped" >&2; fi; \
	redis=$$(scripts/test-redis.sh start) || redis=; \
	if [ -n "$$redis" ]; then export MANDALA_TEST_REDIS_URL="$$redis"; \
	else echo "make test: Redis did not start; the cluster tests will be skipped" >&2; fi; \
	$(PY) -m pytest -q -n $(TEST_JOBS); status=$$?; \
	scripts/test-postgres.sh stop; scripts/test-redis.sh stop; \
	exit $$status

# ruff over the whole tree; mypy over the packages, strict for mandala and protocol (pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# The server with the shipped bots on its ladder (and the Node.js bot when node is installed);
# open http://$(HOST):$(PORT)/ to watch. Ctrl-C stops everything.
demo: $(STAMP)
	$(VENV)/bin/mandala demo --host $(HOST) --port $(PORT)

# Three nodes on one PostgreSQL and one Redis behind HAProxy, one address: http://127.0.0.1:8080
# (scripts/cluster.sh, deploy/haproxy.cfg; state, logs and the admin token in .cluster/).
# `make cluster TLS=1`: https:// and wss:// on that address, HAProxy's certificate signed by a
# local certificate authority whose CA file it prints (.cluster/tls/ca.pem).
# `make cluster-stop` stops them all and keeps the database.
TLS ?=
cluster: $(STAMP)
	CLUSTER_TLS=$(TLS) scripts/cluster.sh start

cluster-stop:
	scripts/cluster.sh stop

bench: $(STAMP)
	$(PY) bench/engine.py
	$(PY) bench/search.py
	$(PY) bench/games.py
	$(PY) bench/tournament_view.py
	$(PY) bench/tournament_list.py
	$(PY) bench/history.py --sizes $(HISTORY_SIZES)

# The training environments' steps per second beside the engine's decisions per second, on one
# core (bench/env.py; docs/training.md#speed).
bench-env: $(STAMP)
	$(PY) bench/env.py

# A season's history (bench/history.py): synthesized histories of each size on SQLite and
# PostgreSQL; bytes per game, startup, the lists' latencies, a live ladder's CPU per decision.
# The million takes a while (the synthesis plays every game): make bench-history HISTORY_SIZES=10000
HISTORY_SIZES ?= 10000,100000,1000000
bench-history: $(STAMP)
	$(PY) bench/history.py --sizes $(HISTORY_SIZES)

# The ladder's pairing and standings on simulated ladders of LADDER_SIZES bots, no server
# (bench/ladder_sim.py): pass time and loop lag (steady and a thundering herd), the fit's
# refresh time, games per bot, and the Kendall τ of the standings against the bots' true
# strengths, against random pairing and Elo. A few minutes at the default sizes.
LADDER_SIZES ?= 100,1000,10000
bench-ladder: $(STAMP)
	$(PY) bench/ladder_sim.py --bots $(LADDER_SIZES)

# The decision path under load against the bare WebSocket ceiling, in one run (bench/load.py);
# PAIRS, SECONDS and THINK are passed on: make load PAIRS=500 THINK=0.3. With an audience
# (VIEWERS of /live, SPECTATORS of running games) the same load runs without it and with it:
# make load THINK=0.05 VIEWERS=1000 SPECTATORS=200. TLS=1: the same load over ws:// and over wss://
# (a certificate made for the run), side by side: what TLS costs the decision path.
# With SCRAPE=N one server runs the load in windows, alternately without and with a scraper reading GET /metrics N
# times a second, ROUNDS windows of SECONDS each: make load SCRAPE=100 ROUNDS=4
PAIRS   ?= 100
SECONDS ?= 10
THINK   ?= 0
VIEWERS ?= 0
SPECTATORS ?= 0
SCRAPE ?= 0
ROUNDS ?= 2
load: $(STAMP)
	$(PY) bench/load.py --pairs $(PAIRS) --seconds $(SECONDS) --think $(THINK) --viewers $(VIEWERS) --spectators $(SPECTATORS) --scrape $(SCRAPE) --rounds $(ROUNDS) $(if $(TLS),--tls)

# The same load on cluster nodes (PostgreSQL and Redis started for it): one node, two nodes with
# each pair on one node, two nodes with each pair across them; then the ladder on three nodes,
# BOTS bots of known strengths spread over them, MAX_GAMES games each at a time
# (bench/cluster_load.py, bench/ladder_load.py). RUNS picks some: make load-cluster
# RUNS=ladder BOTS=1000 SECONDS=600 THINK=0.5 MAX_GAMES=1. DURABLE=1 runs its PostgreSQL with fsync on.
DURABLE ?=
BOTS ?= 60
MAX_GAMES ?= 2
RUNS ?= one,pairs,across,ladder
load-cluster: $(STAMP)
	$(PY) bench/cluster_load.py --runs $(RUNS) --pairs $(PAIRS) --bots $(BOTS) --max-games $(MAX_GAMES) --seconds $(SECONDS) --think $(THINK) $(if $(DURABLE),--durable)

schema: $(STAMP)
	$(PY) -m protocol.schema

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info clients/python/build clients/python/*.egg-info

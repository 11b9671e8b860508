// Mandala Arena's page: the top of the ladder live from /live (a sample of the games, or every
// game when asked), the rest of the table a page at a time and a bot found by name from
// /api/ladder, games live from /ws (as a spectator),
// finished games step by step from /api/games/{id}/replay (through a spectator's eyes or, with
// ?seat=, a seat's: its hand, its decisions, its think times and incidents), bot profiles and
// their health from /api/bots/{name}, tournaments from /api/tournaments and the ``tournament``
// messages of /live.
// Plain JavaScript, no build step. Routes are hashes: #/ (#/?bot=NAME: the standings around
// NAME), #/game/ID, #/bot/NAME, #/tournaments,
// #/tournaments/ID, #/connect. A finished game's route may name the eyes and the position:
// #/game/ID?seat=0&ply=12 (seat 0's eyes at ply 12), #/game/ID?ply=12 (a spectator's),
// #/game/ID?bot=NAME&ply=12 (the seat NAME played); #/games/ID is the same as #/game/ID.
"use strict";

(() => {
  const COLORS = ["red", "orange", "yellow", "green", "purple", "black"];
  const RECENT_MAX = 20;
  const AROUND = 10;  // rows above and below a bot found by name
  const PAGE_ROWS = 50;  // rows of a page below the top
  const PAGE_REFRESH_MS = 10000;  // a page below the top is read again at most this often, as the ladder moves
  const HELD_RETRY_MS = 2000;  // a game whose record is held asks for its replay again this often
  const BOT_REFRESH_MS = 10000;  // a bot's profile is read again at most this often, as its games start and end
  const BOT_POLL_MS = 60000;  // ... and this often while the tab is shown (the stream tells of a sample of games)
  const KIND = { ladder: "ladder", qualification: "qualification", challenge: "challenge", admin: "organizer", tournament: "tournament" };

  // ---------------------------------------------------------------- small helpers

  const $ = (selector, root = document) => root.querySelector(selector);

  /** h("div.a.b", {attrs}, ...children): an element. Attributes: data-* and aria-* as text
   *  (true → "true"), on* as listeners, others as HTML attributes (true → present, false → absent). */
  function h(spec, attrs, ...children) {
    const [tag, ...classes] = spec.split(".");
    const node = document.createElement(tag || "div");
    if (classes.length) node.className = classes.join(" ");
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined) continue;
      if (key.startsWith("data-") || key.startsWith("aria-")) node.setAttribute(key, String(value));
      else if (value === false) continue;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "text") node.textContent = value;
      else if (key === "class") node.className += " " + value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const wsUrl = (path) => (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  const round = (x) => Math.round(x).toString();
  const total = (cards) => COLORS.reduce((n, c) => n + (cards[c] || 0), 0);
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const enc = encodeURIComponent;

  function ago(iso) {
    if (!iso) return "";
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 45) return "just now";
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return new Date(iso).toLocaleDateString();
  }

  /** A duration in milliseconds as people read it: "3.2 ms", "401 ms", "1.2 s". */
  function fmtMs(x) {
    if (x === null || x === undefined) return "";
    const tenths = Number(x.toFixed(1));
    if (tenths < 1000) return `${tenths} ms`;
    return `${(x / 1000).toFixed(x < 10000 ? 1 : 0)} s`;
  }

  /** ``text`` cut to ``max`` characters, with "…" if it was longer. */
  const clip = (text, max) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

  /** What a bot sent, as text: the move as the server read it, or the raw frame. */
  const sentText = (sent) => (typeof sent === "string" ? sent : JSON.stringify(sent));

  /** The hash of a game: its eyes (``seat`` 0/1, or ``bot`` by name) and position (``ply``)
   *  when given; ``null`` leaves them out. */
  function gameHref(id, { seat = null, bot = null, ply = null } = {}) {
    const q = [];
    if (seat !== null && seat !== undefined) q.push(`seat=${seat}`);
    else if (bot) q.push(`bot=${enc(bot)}`);
    if (ply !== null && ply !== undefined) q.push(`ply=${ply}`);
    return `#/game/${enc(id)}${q.length ? `?${q.join("&")}` : ""}`;
  }

  /** ``{seat, bot, ply}`` from a game route's query (``null`` for what it leaves out). */
  function gameQuery(hash) {
    const at = hash.indexOf("?");
    const params = new URLSearchParams(at < 0 ? "" : hash.slice(at + 1));
    const seat = params.get("seat");
    const ply = params.get("ply");
    return {
      seat: seat === "0" || seat === "1" ? Number(seat) : null,
      bot: params.get("bot") || null,
      ply: ply !== null && /^\d+$/.test(ply) ? Number(ply) : null,
    };
  }

  const timeEl = (iso) => h("time", { datetime: iso, title: iso ? new Date(iso).toLocaleString() : "", text: ago(iso) });

  function refreshTimes() {
    for (const t of document.querySelectorAll("time[datetime]")) t.textContent = ago(t.getAttribute("datetime"));
  }

  /** Briefly highlight an element whose value just changed. */
  function flash(node) {
    node.classList.remove("flash");
    void node.offsetWidth;
    node.classList.add("flash");
  }

  /** Set a cell's text; flash it when an earlier value is replaced. */
  function setText(node, text) {
    if (node.textContent === text) return;
    const had = node.dataset.filled === "1";
    node.textContent = text;
    node.dataset.filled = "1";
    if (had) flash(node);
  }

  /** Keep ``container``'s children one per item, in order, reusing nodes by key. */
  function reconcile(container, items, key, make, update) {
    const old = new Map([...container.children].map((node) => [node.dataset.key, node]));
    items.forEach((item, i) => {
      const k = key(item);
      let node = old.get(k);
      if (node) old.delete(k);
      else {
        node = make(item);
        node.dataset.key = k;
      }
      update(node, item);
      if (container.children[i] !== node) container.insertBefore(node, container.children[i] || null);
    });
    for (const node of old.values()) node.remove();
  }

  /** ``{status, body, next, prev}``: the paths of the pages a ``Link`` header names. A server
   *  that cannot be reached (restarting, say) is status 0 with an error to show, never a throw:
   *  a view that waits on an answer gets one, and can be asked again. */
  async function getJson(path) {
    let resp;
    try {
      resp = await fetch(path, { headers: { Accept: "application/json" } });
    } catch {
      return { status: 0, body: { error: { message: "the server cannot be reached" } }, next: null, prev: null };
    }
    const body = await resp.json().catch(() => null);
    const links = resp.headers.get("Link") || "";
    const link = (rel) => {
      const m = new RegExp(`<([^>]+)>;\\s*rel="${rel}"`).exec(links);
      return m ? m[1] : null;
    };
    return { status: resp.status, body, next: link("next"), prev: link("prev") };
  }

  const count = (n) => n.toLocaleString("en-US");

  // ---------------------------------------------------------------- words

  const botLink = (name) => h("a.bot", { href: `#/bot/${enc(name)}`, title: name, text: name });

  function chip(color, count, small) {
    return h(`span.chip.${color}${small ? ".sm" : ""}`, {
      "data-color": color, "data-count": count, title: `${count} ${color}`, text: String(count),
    });
  }

  function chips(cards, testid) {
    const shown = COLORS.filter((c) => cards[c] > 0);
    return h("div.chips", { "data-testid": testid, "data-total": total(cards) },
      shown.length ? shown.map((c) => chip(c, cards[c])) : h("span.none", { text: "empty" }));
  }

  const RATING_NOTE = "Ranked by the Bradley–Terry rating, fitted over all rated games since the last ratings reset "
    + "(Elo scale); its 95% interval always contains it. Elo (live) moves after every rated game and depends on "
    + "the order of the games.";

  const mandalaName = (m) => `mandala ${m + 1}`;

  /** A played move (R22 plus "player") in words; ``before`` is the view it was played on. */
  function moveWords(move, players, before) {
    const words = (...parts) => h("span.mv", { title: JSON.stringify(move) },
      parts.filter((p) => p !== "").flatMap((p, i) => (i ? [" ", p] : [p])));
    const who = h("strong", { text: players[move.player] });
    switch (move.type) {
      case "mountain":
        return words(who, "put", chip(move.color, 1, true), `on the mountain of ${mandalaName(move.mandala)}`);
      case "field":
        return words(who, "played", chip(move.color, move.count, true), `to their field on ${mandalaName(move.mandala)}`);
      case "discard":
        return words(who, "discarded", chip(move.color, move.count, true), "and drew again");
      case "claim": {
        const m = before && before.destruction ? before.destruction.mandala : null;
        return m === null ? words(who, "claimed", chip(move.color, "✓", true))
          : words(who, "claimed", chip(move.color, before.mandalas[m].mountain[move.color], true), `from ${mandalaName(m)}`);
      }
      case "pass":
        return words(who, "passed with an empty hand");
      default:
        return words(who, JSON.stringify(move));
    }
  }

  const REASONS = {
    river: "a river is full",
    deck: "the deck ran out",
    no_moves: "no cards left to play",
    turn_limit: "the turn limit was reached",
  };

  /** [headline, score, reason] for a game's result ("bob wins", "25–14", "the deck ran out"). */
  function resultWords(result, players) {
    if (!result) return ["", "", ""];
    const loser = result.winner === null ? null : players[1 - result.winner];
    const why = result.end_reason === "timeout" ? `${loser} ran out of time`
      : result.end_reason === "resign" ? `${loser} resigned`
      : result.end_reason === "forfeit" ? (loser ? `${loser} forfeited: not connected when due` : "both forfeited: not connected when due")
      : result.end_reason === "aborted" ? "stopped by the server"
      : REASONS[result.end_reason] || result.end_reason;
    if (result.end_reason === "aborted") return ["Aborted", "", why];
    const [w, l] = result.winner === 1 ? [1, 0] : [0, 1];  // the winner's score first
    const score = `${result.scores[w]}–${result.scores[l]}`;
    return [result.winner === null ? "Draw" : `${players[result.winner]} wins`, score, why];
  }

  /** A result's scores in seat order ("14–25"), for a list that names the players in seat
   *  order ("ann vs bob"); "" for a game aborted or not over. */
  const seatScores = (result) =>
    result && result.end_reason !== "aborted" ? `${result.scores[0]}–${result.scores[1]}` : "";

  // ---------------------------------------------------------------- the live stream (/live)

  // ``top``: the top of the standings as /live's ``standings`` and ``top_changed`` made it;
  // ``every``: this page asked for every game (/live?games=all), not the sample.
  const live = {
    ws: null, delay: 1000, opened: 0, batches: 0, running: new Map(), recent: [],
    top: [], total: 0, paused: false, counts: null, every: false, applied: 0,
  };

  function setLiveStatus(state, label) {
    const el = $("[data-testid=live-status]");
    el.dataset.state = state;
    $(".label", el).textContent = label;
  }

  function connectLive() {
    setLiveStatus("connecting", "connecting…");
    const ws = new WebSocket(wsUrl(live.every ? "/live?games=all" : "/live"));
    live.ws = ws;
    ws.onopen = () => {
      live.delay = 1000;
      live.batches = 0;
      setLiveStatus("open", "live");
      // What changed while the stream was down is not sent again: the open view fetches anew.
      if (live.opened++ > 0 && current && current.resync) current.resync();
    };
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      onLive(msg);
    };
    ws.onclose = () => {
      if (live.ws !== ws) return;
      const wait = live.delay * (0.8 + 0.4 * Math.random());
      live.delay = Math.min(live.delay * 2, 30000);
      setLiveStatus("closed", `offline, retrying in ${Math.ceil(wait / 1000)} s`);
      setTimeout(connectLive, wait);
    };
  }

  /** The stream again, now following every game or the sample (its fresh start replaces all). */
  function restartLive() {
    const ws = live.ws;
    live.ws = null;
    if (ws) ws.close();
    connectLive();
  }

  /** Every /live frame is a batch of events, applied in order; the lists are drawn once per
   *  batch. How many batches came and the time the last one took to apply and draw are kept on
   *  the live status (``data-batches``, ``data-batch-ms``): what a batch costs the main thread. */
  function onLive(batch) {
    if (batch.type !== "batch") return;
    const began = performance.now();
    // A fresh start after frames were skipped (this page fell behind): the open view fetches anew.
    const fresh = batch.messages.length > 0 && batch.messages[0].type === "games";
    if (fresh && live.batches++ > 0 && current && current.resync) current.resync();
    const changed = new Set();
    for (const msg of batch.messages) changed.add(onLiveEvent(msg));
    if (changed.has("standings")) renderStandings();
    if (changed.has("games")) renderGames();
    live.applied += 1;
    const status = $("[data-testid=live-status]").dataset;
    status.batches = String(live.applied);
    status.batchMs = (performance.now() - began).toFixed(2);
  }

  /** One event of a batch; what it changed: "standings", "games" or nothing. */
  function onLiveEvent(msg) {
    if (msg.type === "standings") {
      live.top = msg.standings;
      live.total = msg.total;
      live.paused = msg.paused;
      return "standings";
    } else if (msg.type === "top_changed") {
      const top = live.top.slice(0, msg.rows);
      for (const row of msg.changed) top[row.rank - 1] = row;
      live.top = top;
      live.total = msg.total;
      live.paused = msg.paused;
      return "standings";
    } else if (msg.type === "counts") {
      live.counts = msg;
      return "games";
    } else if (msg.type === "games") {
      live.running = new Map(msg.running.map((g) => [g.game_id, g]));
      live.recent = msg.recent.slice(0, RECENT_MAX);
      return "games";
    } else if (msg.type === "game_started") {
      live.running.set(msg.game.game_id, msg.game);
      if (current && current.onGame) current.onGame(msg);
      return "games";
    } else if (msg.type === "game_ended") {
      live.running.delete(msg.game.game_id);
      if (msg.game.status === "finished") {
        live.recent = [msg.game, ...live.recent.filter((g) => g.game_id !== msg.game.game_id)].slice(0, RECENT_MAX);
      }
      if (current && current.onGame) current.onGame(msg);
      return "games";
    } else if (msg.type === "tournament") {
      if (current && current.onTournament) current.onTournament(msg.tournament);
    } else if (msg.type === "health") {
      renderHealth(msg);
    }
    return null;
  }

  /** The banner shown while the server cannot record games (sent again on every reconnect). */
  function renderHealth(health) {
    const banner = $("[data-testid=storage-banner]");
    const failing = health.status !== "ok";
    banner.dataset.status = health.status;
    banner.hidden = !failing;
    if (!failing) return;
    const pending = health.pending > 0 ? `; ${plural(health.pending, "finished game")} waiting to be stored` : "";
    setText($("[data-testid=storage-pending]", banner), pending);
    $("[data-testid=storage-why]", banner).textContent = health.storage ? `(${health.storage})` : "";
  }

  // ---------------------------------------------------------------- home: standings and games

  /** A row of a standings table: ``standing-row`` in the top, ``page-row`` in a page below it. */
  const makeStandingRow = (testid) => () => {
    const cell = (id, cls) => h(`td.${cls.split(" ").join(".")}`, { "data-testid": id });
    return h("tr", { "data-testid": testid },
      cell("rank", "num rank"), cell("bot", "bot-cell"), cell("rating", "num rating"),
      cell("interval", "num interval hide-narrow"), cell("elo", "num elo"), cell("games", "num hide-narrow"),
      cell("opponents", "num hide-narrow"), cell("wdl", "num wdl"));
  };

  /** "1480–1544": a rating's 95% interval, rounded as the rating beside it is. */
  const interval = (low, high) => `${round(low)}–${round(high)}`;

  function updateStandingRow(tr, s) {
    const [rank, bot, rating, range, elo, games, opponents, wdl] = tr.children;
    tr.dataset.bot = s.bot;
    setText(rank, String(s.rank));
    if (bot.dataset.name !== s.bot || bot.dataset.state !== `${s.connected}/${s.seeking}/${s.provisional}`) {
      bot.dataset.name = s.bot;
      bot.dataset.state = `${s.connected}/${s.seeking}/${s.provisional}`;
      bot.replaceChildren();
      append(bot, [
        h("span.online", {
          "data-testid": "online", "data-online": s.connected, "data-seeking": s.seeking,
          title: s.connected ? (s.seeking ? "online, seeking games" : "online, not seeking") : "offline",
        }),
        botLink(s.bot),
        s.provisional ? h("span.prov", { "data-testid": "provisional", title: "provisional: few rated games so far", text: "prov" }) : null,
      ]);
    }
    setText(rating, round(s.rating));
    rating.title = `Bradley–Terry rating ${round(s.rating)}, 95% interval ${round(s.low)} to ${round(s.high)}`;
    setText(range, interval(s.low, s.high));
    range.title = rating.title;
    setText(elo, round(s.elo));
    elo.title = `live Elo after ${plural(s.games, "rated game")}${s.provisional ? " (provisional: it moves faster for now)" : ""}`;
    setText(games, String(s.games));
    games.title = `${plural(s.games, "rated game")} finished since the last ratings reset; ${recentWords(s.recent_games)}`;
    setText(opponents, String(s.opponents));
    opponents.title = `has played ${plural(s.opponents, "different bot")} in rated games since the last ratings reset`;
    const text = `${s.wins}–${s.draws}–${s.losses}`;
    if (wdl.textContent !== text) {
      const had = wdl.dataset.filled === "1";
      wdl.replaceChildren(h("span.w", { text: s.wins }), "–", h("span.d", { text: s.draws }), "–", h("span.l", { text: s.losses }));
      wdl.dataset.filled = "1";
      if (had) flash(wdl);
    }
  }

  const RATED_NOTE = "rated games finished since the last ratings reset (its live Elo moved after each)";
  const RECENT_NOTE = "ladder games paired with it in the last hour: both games of a duplicate pair count from "
    + "the moment the pair is made, so running games, aborted ones and a return game not yet started count too; "
    + "a games-per-hour limit counts these. Not its rated games, which count only finished games since the last ratings reset.";
  const recentWords = (n) => `${plural(n, "ladder game")} paired in the last hour`;

  /** The top of the table as /live keeps it (its ``TOP`` rows, whatever the number of bots). */
  function renderStandings() {
    $("[data-testid=paused]").hidden = !live.paused;
    reconcile($("[data-testid=standings] tbody"), live.top, (s) => s.bot, makeStandingRow("standing-row"), updateStandingRow);
    $("[data-testid=standings-empty]").hidden = live.total > 0;
    $("[data-testid=standings-total]").textContent = count(live.total);
    const partial = live.total > live.top.length;
    const caption = $("[data-testid=top-caption]");
    caption.hidden = !partial;
    caption.textContent = `Top ${live.top.length} of ${count(live.total)}`;
    $("[data-testid=standings-more-line]").hidden = !partial || browse.query !== null;
    browse.stale();
  }

  // ---------------------------------------------------------------- home: the table below the top

  /** A page of the standings below the top, or around a bot found by name, from
   *  GET /api/ladder: at most ``PAGE_ROWS`` rows, read again as the ladder moves. */
  const browse = {
    query: null,  // the query of the page on show ("?limit=50&offset=20", "?bot=NAME&limit=21"), null: none
    bot: null,  // the bot found by name (its row stands out)
    fetched: 0,
    loading: false,
    again: false,

    open(query, bot) {
      this.query = query;
      this.bot = bot;
      this.load();
    },

    close() {
      this.query = null;
      this.bot = null;
      $("[data-testid=ladder-page]").hidden = true;
      $("[data-testid=page-standings] tbody").replaceChildren();
      $("[data-testid=standings-more-line]").hidden = !(live.total > live.top.length);
    },

    /** The ladder moved: the page on show is read again, at most every ``PAGE_REFRESH_MS``. */
    stale() {
      if (this.query !== null && !this.loading && Date.now() - this.fetched > PAGE_REFRESH_MS) this.load();
    },

    async load() {
      if (this.loading) {
        this.again = true;
        return;
      }
      this.loading = true;
      const asked = this.query;
      const { status, body, next, prev } = await getJson(`/api/ladder${asked}`);
      this.loading = false;
      this.fetched = Date.now();
      if (this.again || this.query !== asked) {
        this.again = false;
        if (this.query !== null) this.load();
        return;
      }
      const error = $("[data-testid=standings-search-error]");
      if (status !== 200) {
        error.textContent = body && body.error ? body.error.message : `the standings could not be read (${status})`;
        error.hidden = false;
        this.close();
        return;
      }
      error.hidden = true;
      this.render(body, prev, next);
    },

    render(body, prev, next) {
      const rows = body.standings;
      const mine = rows.find((s) => s.bot === this.bot);
      const first = body.offset + 1;
      $("[data-testid=page-caption]").textContent = mine
        ? `Around ${mine.bot}: rank ${count(mine.rank)} of ${count(body.total)}`
        : rows.length ? `Ranks ${count(first)}–${count(first + rows.length - 1)} of ${count(body.total)}`
        : `No rank from ${count(first)} on: ${count(body.total)} bots are listed`;
      reconcile($("[data-testid=page-standings] tbody"), rows, (s) => s.bot, makeStandingRow("page-row"), (tr, s) => {
        updateStandingRow(tr, s);
        tr.dataset.me = String(s.bot === this.bot);
      });
      const pager = (testid, path) => {
        const button = $(`[data-testid=${testid}]`);
        button.disabled = !path;
        button.dataset.path = path || "";
      };
      pager("page-prev", prev);
      pager("page-next", next);
      $("[data-testid=ladder-page]").hidden = false;
      $("[data-testid=standings-more-line]").hidden = true;
    },
  };

  /** The standings around ``name``: its rank and ``AROUND`` rows on either side. */
  function findBot(name) {
    $("[data-testid=standings-search-input]").value = name;
    browse.open(`?bot=${enc(name)}&limit=${2 * AROUND + 1}`, name);
  }

  function setupStandings() {
    $("[data-testid=standings-search]").addEventListener("submit", (e) => {
      e.preventDefault();
      const name = $("[data-testid=standings-search-input]").value.trim();
      if (!name) return;
      const hash = `#/?bot=${enc(name)}`;
      if (location.hash === hash) findBot(name);
      else location.hash = hash;  // the route finds it (and Back goes back)
    });
    $("[data-testid=standings-more]").addEventListener("click", () => browse.open(`?limit=${PAGE_ROWS}&offset=${live.top.length}`, null));
    for (const testid of ["page-prev", "page-next"]) {
      $(`[data-testid=${testid}]`).addEventListener("click", (e) => {
        const path = e.currentTarget.dataset.path;
        if (path) browse.open(path.slice(path.indexOf("?")), browse.bot);
      });
    }
    $("[data-testid=page-close]").addEventListener("click", () => {
      browse.close();
      if (location.hash.startsWith("#/?")) history.replaceState(null, "", "#/");
    });
    $("[data-testid=every-game]").addEventListener("click", () => {
      live.every = !live.every;
      restartLive();
      renderGames();
    });
  }

  function gameItem(testid) {
    return () => h("li", {}, h("a", { "data-testid": testid }));
  }

  function updateGameItem(li, g) {
    const a = li.firstChild;
    const stamp = `${g.status}/${g.ply}`;
    if (a.dataset.stamp === stamp) return;
    a.dataset.stamp = stamp;
    a.href = `#/game/${enc(g.game_id)}`;
    a.dataset.gameId = g.game_id;
    const win = g.result ? g.result.winner : null;
    const decided = g.result && win !== null;
    const name = (seat) => h(`span${decided ? (win === seat ? ".win" : ".lose") : ""}`, { text: g.players[seat] });
    const score = g.status === "running" ? h("span.badge.live", { text: "live" }) : seatScores(g.result) || "—";
    const reason = g.result ? resultWords(g.result, g.players)[2] : null;
    a.replaceChildren(
      h("span.g-players", {}, name(0), h("span.vs", { text: "vs" }), name(1)),
      h("span.g-score", {}, score),
      h("span.g-meta", {},
        g.rated ? h("span.badge.rated", { text: "rated" }) : null,
        h("span", { text: KIND[g.kind] || g.kind }),
        reason ? h("span", { text: reason }) : null,
        timeEl(g.status === "running" ? g.started : g.ended)),
    );
  }

  /** The running games /live follows (a sample of at most 20, or every one when asked), the
   *  recent results, and the counts of the whole arena. */
  function renderGames() {
    const running = [...live.running.values()].sort((a, b) => (a.started < b.started ? 1 : -1));
    reconcile($("[data-testid=running-games]"), running, (g) => g.game_id, gameItem("running-game"), updateGameItem);
    reconcile($("[data-testid=recent-games]"), live.recent, (g) => g.game_id, gameItem("recent-game"), updateGameItem);
    const c = live.counts;
    const total = c ? c.running : running.length;
    $("[data-testid=running-count]").textContent = count(total);
    $("[data-testid=arena-counts]").textContent = c
      ? `${plural(c.games_per_minute, "game")} finished in the last minute · ${plural(c.bots_connected, "bot")} connected`
        + (!live.every && total > running.length ? ` · ${running.length} of the running games shown` : "")
      : "";
    $("[data-testid=running-empty]").hidden = total > 0 || running.length > 0;
    $("[data-testid=recent-empty]").hidden = live.recent.length > 0;
    const every = $("[data-testid=every-game]");
    every.textContent = live.every ? "Show a sample of the games" : "Show every game";
    every.setAttribute("aria-pressed", String(live.every));
  }

  // ---------------------------------------------------------------- the board

  /** R21: each cup card whose color is in the river scores that river slot's number. */
  const cupScore = (river, cup) => river.reduce((n, color, i) => n + (i + 1) * (cup[color] || 0), 0);

  /** ``final``: the seat's whole cup once the game is over (the replay's ``cups``: public
   *  then, R24), or ``null`` while the board shows what was known during the game. */
  function playerPanel(view, players, seat, over, final) {
    const p = view.players[seat];
    const moving = !over && view.to_move === seat;
    const tag = moving ? (view.phase === "pick" ? "picks" : "to move") : "";
    const slots = [];
    for (let i = 0; i < 6; i++) {
      const color = p.river[i];
      slots.push(color
        ? h(`span.slot.filled.${color}`, { "data-color": color, title: `slot ${i + 1}: ${color} (cup cards of this color score ${i + 1})`, text: i + 1 })
        : h("span.slot", { title: `slot ${i + 1}: empty`, text: i + 1 }));
    }
    const claimed = COLORS.filter((c) => p.cup_claimed[c] > 0).map((c) => chip(c, p.cup_claimed[c], true));
    // A seat's view (a seat replay) also holds that seat's hand and whole cup.
    const own = view.private && view.seat === seat ? view.private : null;
    const cup = final
      ? h("div.cup.final", { "data-testid": `cup-${seat}`, "data-final": "true",
        title: "the whole cup, its two starting cards included: public once the game is over" }, "Whole cup:",
        total(final) ? COLORS.filter((c) => final[c] > 0).map((c) => chip(c, final[c], true)) : "nothing",
        h("span.final-score", { "data-testid": `final-score-${seat}`,
          title: "each cup card whose color is in the river scores that river slot's number",
          text: `· scores ${cupScore(p.river, final)}` }))
      : own
      ? h("div.cup", { "data-testid": `cup-${seat}` }, "In the cup:",
        total(own.cup) ? COLORS.filter((c) => own.cup[c] > 0).map((c) => chip(c, own.cup[c], true)) : "nothing",
        h("span.unseen", { "data-testid": `score-now-${seat}`, text: `· would score ${own.score} now` }))
      : h("div.cup", { "data-testid": `cup-${seat}` }, "In the cup:",
        claimed, p.cup_unknown ? [h("span.chip.sm.hidden-card", { title: "the two starting cards: nobody else has seen them", text: p.cup_unknown }), h("span.unseen", { text: "unseen" })] : null,
        claimed.length || p.cup_unknown ? null : "nothing");
    return h(`section.panel.player${moving ? ".to-move" : ""}${own ? ".eyes" : ""}`, { "data-testid": `player-${seat}`, "data-seat": seat },
      h("div.who", {}, h("span.name", {}, botLink(players[seat])), h("span.turn-tag", { text: tag }),
        own ? h("span.eyes-tag", { text: "seen through its eyes" }) : null),
      h("div.stats", {},
        h("span.stat", {}, "Hand ", h("b", { "data-testid": `hand-size-${seat}`, text: p.hand_size })),
        h("span.stat", {}, "Cup ", h("b", { "data-testid": `cup-size-${seat}`, text: p.cup_size }))),
      h("div.river", { "data-testid": `river-${seat}`, "data-count": p.river.length, title: "River, slots 1 to 6" }, slots),
      own ? h("div.cup.hand", {}, "In the hand:", chips(own.hand, `hand-${seat}`)) : null,
      cup,
    );
  }

  function area(kind, label, cards, before, testid) {
    const changed = before && JSON.stringify(before) !== JSON.stringify(cards);
    return h(`div.area.${kind}${changed ? ".changed" : ""}`, {},
      h("span.label", { title: label, text: label }), chips(cards, testid));
  }

  function mandalaPanel(view, before, players, m) {
    const md = view.mandalas[m];
    const old = before ? before.mandalas[m] : null;
    const destroying = view.destruction && view.destruction.mandala === m;
    return h(`section.panel.mandala${destroying ? ".destroying" : ""}`, { "data-testid": `mandala-${m}` },
      h("h3", {}, `Mandala ${m + 1}`, destroying ? h("span.destroy-tag", { text: "complete: being picked apart" }) : null),
      area("field", `${players[1]}'s field`, md.fields[1], old && old.fields[1], `field-${m}-1`),
      area("mountain", "Mountain", md.mountain, old && old.mountain, `mountain-${m}`),
      area("field", `${players[0]}'s field`, md.fields[0], old && old.fields[0], `field-${m}-0`),
    );
  }

  /** ``cups``: both whole cups, shown once the game is over (else ``null``). */
  function renderBoard(node, view, before, players, ply, over, cups) {
    node.dataset.ply = ply;
    node.dataset.final = cups ? "true" : "false";
    node.replaceChildren(
      playerPanel(view, players, 1, over, cups ? cups[1] : null),
      h("div.mandalas", {}, mandalaPanel(view, before, players, 0), mandalaPanel(view, before, players, 1)),
      playerPanel(view, players, 0, over, cups ? cups[0] : null),
    );
  }

  // ---------------------------------------------------------------- a game page

  const MOVE_KINDS = { mountain: "Mountain", field: "Field", discard: "Discard", claim: "Claim", pass: "Pass" };

  /** A move of R22 in a few plain words (for titles): "field on mandala 2: 2 green". */
  function moveText(m) {
    switch (m.type) {
      case "mountain": return `mountain of ${mandalaName(m.mandala)}: ${m.color}`;
      case "field": return `field on ${mandalaName(m.mandala)}: ${m.count} ${m.color}`;
      case "discard": return `discard ${m.count} ${m.color}`;
      case "claim": return `claim ${m.color}`;
      case "pass": return "pass";
      default: return JSON.stringify(m);
    }
  }

  const sameMove = (a, b) => Boolean(a && b) && a.type === b.type && a.mandala === b.mandala
    && a.color === b.color && a.count === b.count;

  /** A decision's legal moves, compactly: one line per kind (and mandala), a small chip per
   *  move (its count for B and C), the ``answer`` ringed. */
  function legalMoves(legal, answer) {
    const groups = new Map();
    for (const m of legal) {
      const label = m.type === "mountain" || m.type === "field"
        ? `${MOVE_KINDS[m.type]} ${m.mandala + 1}` : MOVE_KINDS[m.type] || m.type;
      if (!groups.has(label)) groups.set(label, []);
      groups.get(label).push(m);
    }
    return h("div.legal", { "data-testid": "decision-legal", "data-count": legal.length },
      h("div.legal-count", { text: `${plural(legal.length, "legal move")}:` }),
      [...groups].map(([label, moves]) => h("div.legal-row", {},
        h("span.legal-kind", { text: label }),
        moves.map((m) => {
          const chosen = sameMove(m, answer);
          const face = m.type === "pass" ? h("span.pass", { text: "pass" })
            : chip(m.color, m.type === "field" || m.type === "discard" ? m.count : m.type === "claim" ? "✓" : 1, true);
          face.removeAttribute("title");  // the move's own title says more
          return h(`span.lm${chosen ? ".answer" : ""}`, {
            "data-testid": chosen ? "legal-answer" : "legal-move", title: moveText(m) + (chosen ? " (the answer)" : ""),
          }, face);
        }))));
  }

  /** One incident of a seat in plain words. */
  function incidentWords(i) {
    const after = i.after_ms !== undefined ? ` after ${fmtMs(i.after_ms)}` : "";
    const into = i.after_ms !== undefined ? ` ${fmtMs(i.after_ms)} into its decision` : "";
    switch (i.kind) {
      case "refused": return `refused: ${i.code || "answer"}${i.rule ? ` (${i.rule})` : ""}${after}`;
      case "late": return `answered${after}, past its deadline: read late by a busy server, and applied`;
      case "timeout": return `timed out${after}${i.away ? " while disconnected" : ""}`;
      case "disconnect": return `disconnected${into}`;
      case "reconnect": return `reconnected${i.away_ms !== undefined ? ` after ${fmtMs(i.away_ms)}` : ""}`;
      case "resign": return `resigned${into}`;
      case "takeover": return `its node died: node ${i.node} took the game over and asked this decision again`;
      default: return String(i.kind);
    }
  }

  /** An incident as a list item: what happened, what was sent (cut short; all of it in the
   *  title) and the server's message. */
  function incidentItem(i, ply) {
    const sent = i.sent !== undefined ? sentText(i.sent) : null;
    const other = i.request_id !== undefined && i.request_id !== ply ? ` (to request ${i.request_id})` : "";
    return h("li.incident", { "data-testid": "replay-incident", "data-kind": i.kind, title: `${fmtMs(i.at_ms)} into the game` },
      h("span.what", { text: incidentWords(i) + other }),
      sent !== null ? [" — sent ", h("code.sent", { "data-testid": "incident-sent", title: clip(sent, 2000), text: clip(sent, 140) })] : null,
      i.message ? h("div.msg", { text: i.message }) : null);
  }

  class GameView {
    constructor(root, id, want) {
      this.root = root;
      this.id = id;
      this.alive = true;
      this.mode = "loading";
      this.ws = null;
      this.want = want || { seat: null, bot: null, ply: null };
      this.seat = null;  // whose eyes the replay is seen through: null for a spectator's
      this.replays = new Map();  // "spectator", 0, 1 → the replay through those eyes
      this.eyesAsked = 0;
      this.onKey = (e) => this.key(e);
      document.addEventListener("keydown", this.onKey);
      root.replaceChildren(h("p.empty", { text: "Loading the game…" }));
      this.load();
    }

    destroy() {
      this.alive = false;
      this.closeWatch();
      document.removeEventListener("keydown", this.onKey);
    }

    closeWatch() {
      if (this.ws) {
        const ws = this.ws;
        this.ws = null;
        ws.close();
      }
    }

    async load() {
      const { status, body } = await getJson(`/api/games/${enc(this.id)}`);
      if (!this.alive) return;
      if (status === 0) { // not reachable (restarting): ask again, as a watch that lost its socket does
        if (this.toMove) this.toMove.textContent = "The server cannot be reached; trying again…";
        setTimeout(() => this.alive && this.load(), 2000);
        return;
      }
      if (status !== 200) {
        this.root.replaceChildren(h("p.empty", { text: status === 404 ? `There is no game ${this.id}.` : `The game could not be loaded (${status}).` }),
          h("a.back", { href: "#/", text: "← Ladder" }));
        return;
      }
      this.players = body.players;
      this.layout(body);
      if (body.status === "running") this.watch();
      else if (body.record_held) this.showHeld(body);
      else this.loadReplay();
    }

    layout(game) {
      const [p0, p1] = game.players;
      // The game's tournament, as /live listed it (GET /api/games/{id} does not say).
      const listed = live.running.get(game.game_id) || live.recent.find((g) => g.game_id === game.game_id);
      const tid = game.tournament_id || (listed && listed.tournament_id);
      this.statusBadge = h("span.badge", { "data-testid": "game-status" });
      this.board = h("div.board", { "data-testid": "board" });
      this.resultBox = h("div.result", { "data-testid": "result", hidden: true });
      this.toMove = h("div.status-line", { "data-testid": "to-move" });
      this.lastMove = h("div.last-move", { "data-testid": "last-move" });
      this.ply = h("dd", { "data-testid": "ply" });
      this.turns = h("dd", { "data-testid": "turns" });
      this.deck = h("dd", { "data-testid": "deck-size" });
      this.discard = h("dd");
      this.eyes = this.makeEyes(game.players);
      this.controls = this.makeControls();
      this.decisionBox = h("div.decision", { "data-testid": "replay-decision", hidden: true });
      this.moveList = h("ol");
      this.moves = h("div.moves", { "data-testid": "move-list" }, this.moveList);
      this.root.replaceChildren(
        h("div.game-head", {},
          tid
            ? h("a.back", { "data-testid": "game-tournament", href: `#/tournaments/${enc(tid)}`, text: "← Tournament" })
            : h("a.back", { href: "#/", text: "← Ladder" }),
          h("h2", {}, botLink(p0), h("span.vs", { text: " vs " }), botLink(p1)),
          this.statusBadge,
          h("code.game-id", { title: "game id", text: game.game_id })),
        h("div.game-grid", {},
          this.board,
          h("aside.panel.side-info", {},
            this.eyes, this.resultBox, this.toMove, this.lastMove,
            h("dl.table-info", {},
              h("dt", { text: "Ply" }), this.ply,
              h("dt", { text: "Turns" }), this.turns,
              h("dt", { text: "Deck" }), this.deck,
              h("dt", { text: "Discard" }), this.discard),
            this.controls, this.decisionBox, this.moves)),
      );
    }

    /** The eyes switch of a finished game: the spectator's, or one seat's. */
    makeEyes(players) {
      const button = (testid, label, seat, title) => h("button", {
        type: "button", "data-testid": testid, "data-seat": seat === null ? "" : seat, title, text: label,
        "aria-pressed": seat === null, onclick: () => this.chooseEyes(seat),
      });
      this.eyesButtons = [
        button("eyes-spectator", "Spectator", null, "what a spectator saw: no hand but the counts"),
        button("eyes-seat-0", players[0], 0, `what ${players[0]} saw: its hand, its decisions, its think times and incidents`),
        button("eyes-seat-1", players[1], 1, `what ${players[1]} saw: its hand, its decisions, its think times and incidents`),
      ];
      this.eyesNote = h("div.eyes-note", { "data-testid": "eyes-note", hidden: true });
      return h("div.eyes-box", { hidden: true },
        h("div.eyes-switch", { "data-testid": "replay-eyes", role: "group", "aria-label": "whose eyes the replay is seen through" },
          h("span.eyes-label", { text: "Eyes" }), this.eyesButtons),
        this.eyesNote);
    }

    makeControls() {
      const button = (testid, label, title, step) =>
        h("button", { type: "button", "data-testid": testid, title, text: label, onclick: () => this.goto(step(this.index)) });
      this.first = button("replay-first", "«", "first position (Home)", () => 0);
      this.prev = button("replay-prev", "‹", "previous move (←)", (i) => i - 1);
      this.next = button("replay-next", "›", "next move (→)", (i) => i + 1);
      this.last = button("replay-last", "»", "last position (End)", () => Infinity);
      this.plyOf = h("span.ply-of", { "data-testid": "replay-position" });
      this.scrub = h("input.scrub", { type: "range", min: 0, max: 0, value: 0, "aria-label": "position in the game",
        oninput: (e) => this.goto(Number(e.target.value)) });
      this.marks = h("div.marks", { "data-testid": "incident-marks" });
      return h("div", { "data-testid": "replay-controls", hidden: true },
        h("div.controls", {}, this.first, this.prev, this.next, this.last, this.plyOf),
        this.scrub, this.marks,
        h("div.keys", { text: "← → step · Home / End jump" }));
    }

    setStatus(mode) {
      this.mode = mode;
      this.statusBadge.textContent = mode === "live" ? "live" : this.status || mode;
      this.statusBadge.className = `badge${mode === "live" ? " live" : ""}`;
      this.controls.hidden = mode !== "replay";
      this.eyes.hidden = mode !== "replay";
    }

    /** ``cups``: the replay's whole cups, given at the last position of a game that is over. */
    showSide(view, before, move, ply, result, cups = null) {
      this.ply.textContent = String(ply);
      this.turns.textContent = String(view.turns);
      this.deck.textContent = `${view.deck_size}${view.reshuffles ? ` · reshuffled ${plural(view.reshuffles, "time")}` : ""}`;
      this.discard.replaceChildren(chips(view.discard, "discard"));
      const intro = ply === 0 ? "The deal." : this.mode === "live" ? "Watching live: each move appears as it is played." : "";
      this.lastMove.replaceChildren(move ? moveWords(move, this.players, before) : h("span.empty", { text: intro }));
      const over = Boolean(result) || view.phase === "over";
      let line = "Game over";
      if (!over) {
        const who = this.players[view.to_move];
        line = view.phase === "pick" ? `${who} picks from ${mandalaName(view.destruction.mandala)}` : `${who} to move`;
        if (view.river_filled) line += " · a river is full: this destruction ends the game";
        else if (view.deck_exhausted) line += " · the deck ran out: the next destruction ends the game";
      }
      this.toMove.textContent = line;
      this.resultBox.hidden = !result;
      if (result) {
        const [headline, score, why] = resultWords(result, this.players);
        this.resultBox.replaceChildren(headline, " ", h("span.score", { text: score }), h("span.why", { text: why }));
      }
      renderBoard(this.board, view, before, this.players, ply, over, cups);
    }

    // -------- live, as a spectator over /ws

    watch() {
      this.status = "running";
      this.setStatus("live");
      this.liveView = null;
      const ws = new WebSocket(wsUrl("/ws"));
      this.ws = ws;
      const send = (obj) => ws.send(JSON.stringify(obj));
      ws.onopen = () => send({ type: "hello", protocol: 1 });
      ws.onmessage = (ev) => {
        if (ws !== this.ws) return;
        const msg = JSON.parse(ev.data);
        if (msg.type === "welcome") send({ type: "watch", game_id: this.id });
        else if (msg.type === "update" && msg.game_id === this.id) this.liveUpdate(msg);
        else if (msg.type === "game_over" && msg.game_id === this.id) {
          this.result = msg.result;
          this.loadReplay();
        } else if (msg.type === "error" && (msg.code === "game_over" || msg.code === "unknown_game")) this.loadReplay();
      };
      ws.onclose = () => {
        if (ws === this.ws && this.alive) {
          this.ws = null;
          this.toMove.textContent = "Connection lost; reconnecting…";
          setTimeout(() => this.alive && this.load(), 2000);
        }
      };
    }

    liveUpdate(msg) {
      const before = this.liveView;
      this.liveView = msg.view;
      if (msg.move) {
        this.moveList.append(h("li", {}, h("span.n", { text: msg.ply }), moveWords(msg.move, this.players, before)));
        this.moves.scrollTop = this.moves.scrollHeight;
      }
      this.showSide(msg.view, msg.move ? before : null, msg.move, msg.ply, null);
    }

    // -------- finished: step through /api/games/{id}/replay, through whose eyes the hash says

    async loadReplay() {
      this.closeWatch();
      const { status, body } = await getJson(`/api/games/${enc(this.id)}/replay`);
      if (!this.alive) return;
      if (status === 409 && body && body.error && body.error.code === "record_held") return this.held();
      if (status === 409) return this.watch();
      if (status !== 200) {
        this.status = "aborted";
        this.setStatus("over");
        this.toMove.textContent = body && body.error ? body.error.message : `no replay (${status})`;
        return;
      }
      this.replays.set("spectator", body);
      this.replay = body;
      this.seat = null;
      this.status = body.status;
      this.result = body.result;
      this.setStatus("replay");
      const plies = body.plies;
      this.scrub.max = String(plies.length - 1);
      this.moveList.replaceChildren(...plies.slice(1).map((p, i) =>
        h("li", { "data-ply": p.ply, onclick: () => this.goto(p.ply) },
          h("span.n", { text: p.ply }), moveWords(p.move, this.players, plies[i].view))));
      this.index = null;
      this.navigate(this.want);
    }

    /** The replay was refused: the game ended, its record held, after the page asked for it. */
    async held() {
      const { status, body } = await getJson(`/api/games/${enc(this.id)}`);
      if (!this.alive) return;
      if (status === 200 && body.record_held) this.showHeld(body);
      else setTimeout(() => this.alive && this.loadReplay(), HELD_RETRY_MS);  // released meanwhile, or unreachable
    }

    /** Over, but its record is held while the other game of its deal is to be played
     *  (PROTOCOL.md §12.1): the last position as a spectator saw it, what it waits for, and the
     *  game (``GET /api/games/{id}``) asked for again every few seconds, its replay shown once
     *  its record is no longer held (the replay itself would be refused, and the refusal
     *  logged by the browser, each time). */
    showHeld(game) {
      this.status = "over";
      this.setStatus("over");
      this.result = game.result;
      if (game.view) this.showSide(game.view, null, null, game.ply, game.result);
      const hold = game.record_held;
      const until = hold.tournament_id ? `slot ${hold.slot} of tournament ${hold.tournament_id}` : `the return game of pair ${hold.pair_id}`;
      const waits = hold.game_id ? h("a", { "data-testid": "held-for", href: gameHref(hold.game_id), text: "watch it" }) : null;
      this.toMove.replaceChildren(h("span", { "data-testid": "record-held",
        text: `Its record is held until ${until} is over: it would tell the hidden cards of that game, dealt the same. The replay comes once it is over.` }),
        ...(waits ? [" ", waits] : []));
      this.waitHeld(JSON.stringify(hold));
    }

    /** Ask for the game every few seconds while its record is held as ``shown``: once it is
     *  served, ask for the replay; held for another game (the return game started), say so. */
    waitHeld(shown) {
      setTimeout(async () => {
        if (!this.alive || this.mode !== "over") return;
        const { status, body } = await getJson(`/api/games/${enc(this.id)}`);
        if (!this.alive || this.mode !== "over") return;
        if (status !== 200 || JSON.stringify(body.record_held) === shown) this.waitHeld(shown);
        else if (body.record_held) this.showHeld(body);
        else this.loadReplay();
      }, HELD_RETRY_MS);
    }

    /** Show what a game route asks for: its eyes and its position (the last by default). */
    navigate(want) {
      this.want = want;
      if (this.mode !== "replay") return;  // loadReplay comes back here
      let seat = want.seat;
      if (seat === null && want.bot && this.players.includes(want.bot)) seat = this.players.indexOf(want.bot);
      const ply = want.ply === null ? Infinity : want.ply;
      if (seat === this.seat) {
        this.goto(ply);
        this.syncHash();
      } else this.setEyes(seat, ply);
    }

    chooseEyes(seat) {
      if (this.mode !== "replay" || seat === this.seat) return;
      this.setEyes(seat, this.index);
    }

    /** See the replay through ``seat``'s eyes (``null``: a spectator's) at position ``ply``;
     *  a seat's replay is fetched once. */
    async setEyes(seat, ply) {
      const asked = ++this.eyesAsked;
      const key = seat === null ? "spectator" : seat;
      let body = this.replays.get(key);
      if (!body) {
        this.eyesNote.hidden = false;
        this.eyesNote.textContent = `Loading what ${this.players[seat]} saw…`;
        const got = await getJson(`/api/games/${enc(this.id)}/replay?seat=${seat}`);
        if (!this.alive || asked !== this.eyesAsked) return;
        if (got.status !== 200) {
          this.eyesNote.textContent = got.body && got.body.error
            ? `${this.players[seat]}'s eyes: ${got.body.error.message}` : `${this.players[seat]}'s eyes could not be loaded (${got.status}).`;
          this.syncHash();
          return;
        }
        body = got.body;
        this.replays.set(key, body);
      }
      this.seat = seat;
      this.replay = body;
      for (const b of this.eyesButtons) b.setAttribute("aria-pressed", String(b.dataset.seat === (seat === null ? "" : String(seat))));
      this.showEyesNote();
      this.markIncidents();
      this.index = null;
      this.goto(ply);
    }

    showEyesNote() {
      const r = this.replay;
      const notes = [];
      if (this.seat !== null) {
        if (!r.measured) notes.push("This game was stored before the server measured think times and incidents: only the views and answers are known.");
        else notes.push(`${this.players[this.seat]} had ${fmtMs(r.decision_ms)} per decision.`);
        if (r.dropped_incidents > 0) notes.push(`${plural(r.dropped_incidents, "more incident")} of this game ${r.dropped_incidents === 1 ? "was" : "were"} counted but not kept.`);
      }
      this.eyesNote.hidden = notes.length === 0;
      this.eyesNote.textContent = notes.join(" ");
    }

    /** Marks under the scrubber (and in the move list) where the seat had incidents. */
    markIncidents() {
      const plies = this.replay.plies;
      const last = Math.max(plies.length - 1, 1);
      const marked = plies.filter((p) => p.incidents && p.incidents.length);
      this.marks.replaceChildren(...marked.map((p) => h("button.mark", {
        type: "button", "data-testid": "incident-mark", "data-ply": p.ply,
        style: `left: calc(8px + (100% - 16px) * ${p.ply / last})`,
        title: `ply ${p.ply}: ${p.incidents.map(incidentWords).join("; ")}`,
        "aria-label": `incidents at ply ${p.ply}`, onclick: () => this.goto(p.ply),
      })));
      this.marks.hidden = marked.length === 0;
      const at = new Set(marked.map((p) => p.ply));
      for (const li of this.moveList.children) li.classList.toggle("has-incident", at.has(Number(li.dataset.ply)));
    }

    goto(i) {
      if (this.mode !== "replay") return;
      const plies = this.replay.plies;
      i = Math.max(0, Math.min(plies.length - 1, i));
      if (i === this.index) return;
      this.index = i;
      const p = plies[i];
      const isLast = i === plies.length - 1;
      const cups = isLast && this.replay.cups ? this.replay.cups : null;
      this.showSide(p.view, i > 0 ? plies[i - 1].view : null, p.move, p.ply, isLast ? this.result : null, cups);
      const n = p.incidents ? p.incidents.length : 0;
      this.plyOf.textContent = `${i} / ${plies.length - 1}${n ? ` · ${plural(n, "incident")}` : ""}`;
      this.scrub.value = String(i);
      this.first.disabled = this.prev.disabled = i === 0;
      this.next.disabled = this.last.disabled = isLast;
      this.showDecision(p);
      for (const li of this.moveList.querySelectorAll("li.current")) li.classList.remove("current");
      const li = this.moveList.children[i - 1];
      if (li) {
        li.classList.add("current");
        const box = this.moves;
        if (li.offsetTop < box.scrollTop || li.offsetTop + li.offsetHeight > box.scrollTop + box.clientHeight) {
          box.scrollTop = li.offsetTop - box.clientHeight / 2;
        }
      }
      this.syncHash();
    }

    /** The hash follows the eyes and the position (the last one is left out), without a
     *  new history entry and without routing again. */
    syncHash() {
      if (!this.replay || this.index === null) return;
      const last = this.replay.plies.length - 1;
      const want = gameHref(this.id, { seat: this.seat, ply: this.index === last ? null : this.index });
      if (location.hash !== want) history.replaceState(history.state, "", want);
    }

    /** Through a seat's eyes: its decision at this position, if it had one, and its incidents. */
    showDecision(p) {
      const box = this.decisionBox;
      box.hidden = this.seat === null;
      if (this.seat === null) return;
      const name = this.players[this.seat];
      const d = p.decision;
      const r = this.replay;
      let body;
      if (!d) {
        body = h("p.empty", { "data-testid": "no-decision", text: `No decision of ${name} at this position.` });
      } else {
        const answered = d.answer !== null && d.answer !== undefined;
        let think;
        if (d.think_ms !== null && d.think_ms !== undefined) {
          think = [`thought ${fmtMs(d.think_ms)}`, r.decision_ms ? ` of ${fmtMs(r.decision_ms)}` : "",
            r.decision_ms ? h("progress.bar.think", { max: r.decision_ms, value: Math.min(d.think_ms, r.decision_ms) }) : null];
        } else if (!answered) {
          think = r.decision_ms ? `the clock gave it ${fmtMs(r.decision_ms)}` : "";
        } else think = "think time not measured";
        body = [
          h("div.dec-head", {},
            h("strong", { text: `${name}'s decision` }), " ",
            h("code", { "data-testid": "decision-request", text: `request ${d.request_id}` })),
          h("div.dec-answer", { "data-testid": "decision-answer" }, "Answer: ",
            answered ? moveWords({ player: this.seat, ...d.answer }, this.players, p.view)
              : h("span.no-answer", { text: "no answer" })),
          h("div.dec-think", { "data-testid": "decision-think" }, think),
          legalMoves(d.legal, answered ? d.answer : null),
        ];
      }
      const incidents = p.incidents || [];
      box.replaceChildren();
      append(box, [
        h("h3", { text: `Through ${name}'s eyes` }),
        body,
        incidents.length ? h("ul.incidents", { "data-testid": "replay-incidents" }, incidents.map((i) => incidentItem(i, p.ply))) : null,
      ]);
    }

    key(e) {
      if (this.mode !== "replay" || e.target === this.scrub || e.altKey || e.ctrlKey || e.metaKey) return;
      const step = { ArrowLeft: -1, ArrowRight: 1 }[e.key];
      if (step) this.goto(this.index + step);
      else if (e.key === "Home") this.goto(0);
      else if (e.key === "End") this.goto(Infinity);
      else return;
      e.preventDefault();
    }
  }

  // ---------------------------------------------------------------- a bot's profile

  function sparkline(history) {
    const points = history.length ? [history[0].rating_before, ...history.map((e) => e.rating_after)] : [];
    if (points.length < 2) return h("p.empty", { text: "No rated game yet." });
    const W = 600, H = 120, pad = 6;
    const lo = Math.min(...points), hi = Math.max(...points);
    const span = Math.max(hi - lo, 1);
    const x = (i) => pad + (i * (W - 2 * pad)) / (points.length - 1);
    const y = (r) => pad + 12 + ((hi - r) * (H - 2 * pad - 12)) / span;
    const line = points.map((r, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(r).toFixed(1)}`).join("");
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("class", "spark");
    svg.setAttribute("data-testid", "rating-chart");
    const path = (cls, d) => {
      const p = document.createElementNS(ns, "path");
      p.setAttribute("class", cls);
      p.setAttribute("d", d);
      svg.append(p);
    };
    path("area", `${line}L${x(points.length - 1).toFixed(1)},${H}L${x(0).toFixed(1)},${H}Z`);
    path("line", line);
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", String(pad));
    label.setAttribute("y", "11");
    label.textContent = `${round(lo)}–${round(hi)}`;
    svg.append(label);
    return svg;
  }

  function outcome(g, name) {
    if (!g.result || g.result.end_reason === "aborted") return ["aborted", ""];
    const seat = g.players.indexOf(name);
    if (g.result.winner === null) return ["draw", "draw"];
    return g.result.winner === seat ? ["win", "win"] : ["loss", "loss"];
  }

  const HEALTH_COUNTS = [
    ["timeouts", "time-outs", "decisions it did not answer in time"],
    ["late_answers", "late answers", "answers that came after the clock had run out"],
    ["illegal_moves", "illegal moves", "answers refused as illegal_move"],
    ["invalid_answers", "invalid answers", "other refused answers: stale request ids, malformed moves, frames that did not decode"],
    ["disconnects", "disconnects", "its connection closed during a game"],
    ["resignations", "resignations", "games it resigned"],
    ["forfeits", "forfeits", "tournament games it lost because it was not connected when they were due"],
  ];
  const LOST_CAUSE = {
    timeout: "ran out of time", disconnect: "ran out of time while disconnected",
    resign: "resigned", forfeit: "forfeited: not connected when due",
  };

  /** An incident's kind in a few words, for the health table. */
  function incidentKind(i) {
    switch (i.kind) {
      case "refused": return `refused: ${i.code || "answer"}${i.rule ? ` (${i.rule})` : ""}`;
      case "late": return "late answer";
      case "timeout": return i.away ? "time-out while disconnected" : "time-out";
      case "disconnect": return "disconnect";
      case "reconnect": return "reconnect";
      case "resign": return "resignation";
      case "takeover": return "taken over (its node died)";
      default: return String(i.kind);
    }
  }

  /** A bot's health over its recent games: think times, counts of what went wrong, the games
   *  that cost it and each incident, every one linked to the decision in the bot's eyes. */
  function healthPanel(name, health, games) {
    const seats = new Map();
    for (const g of games) if (g.players.includes(name)) seats.set(g.game_id, g.players.indexOf(name));
    for (const i of health.incidents) seats.set(i.game_id, i.seat);
    const at = (id, ply) => gameHref(id, seats.has(id) ? { seat: seats.get(id), ply } : { bot: name, ply });
    const t = health.think_ms;
    const think = t
      ? h("dl.table-info", { "data-testid": "health-think" },
        h("dt", { text: "Median" }), h("dd", { "data-testid": "health-p50", text: fmtMs(t.p50) }),
        h("dt", { text: "95th percentile" }), h("dd", { "data-testid": "health-p95", text: fmtMs(t.p95) }),
        h("dt", { text: "Slowest" }), h("dd", {},
          h("span", { "data-testid": "health-max", text: fmtMs(t.max) }),
          t.slowest ? [" · ", h("a", { "data-testid": "health-slowest", href: at(t.slowest.game_id, t.slowest.ply),
            title: "that decision, through its eyes", text: `game ${t.slowest.game_id}, ply ${t.slowest.ply}` })] : null))
      : h("p.empty", { "data-testid": "health-think", text: "No measured decision yet." });
    const tiles = h("div.health-counts", {},
      HEALTH_COUNTS.map(([key, label, title]) => h(`div.tile${health[key] ? ".bad" : ""}`, { title },
        h("b", { "data-testid": `health-${key.replace("_", "-")}`, text: health[key] }), h("span", { text: label }))));
    const lostRows = health.lost.map((g) => h("tr", { "data-testid": "health-lost-row", "data-cause": g.cause },
      h("td", {}, h("a", { "data-testid": "health-lost-link", href: at(g.game_id, g.ply), text: `vs ${g.opponent}` })),
      h("td", { text: LOST_CAUSE[g.cause] || g.cause }),
      h("td.num", { text: g.ply }),
      h("td", { text: KIND[g.kind] || g.kind }),
      h("td", {}, timeEl(g.ended))));
    const incidentRows = health.incidents.map((i) => {
      const sent = i.sent !== undefined ? sentText(i.sent) : "";
      const after = i.after_ms !== undefined ? fmtMs(i.after_ms) : i.away_ms !== undefined ? `away ${fmtMs(i.away_ms)}` : "";
      return h("tr", { "data-testid": "health-incident", "data-kind": i.kind },
        h("td", {}, h("a", { "data-testid": "health-incident-link", href: at(i.game_id, i.ply),
          title: "this decision, through its eyes", text: i.game_id }), " ", timeEl(i.started)),
        h("td.num", { text: i.request_id !== undefined && i.request_id !== i.ply ? `${i.ply} · request ${i.request_id}` : String(i.ply) }),
        h("td", { "data-testid": "health-incident-kind", title: i.message || null, text: incidentKind(i) }),
        h("td.num", { text: after }),
        h("td.sent-cell", {}, sent ? h("code.sent", { title: clip(sent, 2000), text: clip(sent, 60) }) : null));
    });
    return h("section.panel.health", { "data-testid": "bot-health" },
      h("div.panel-head", {}, h("h2", { text: "Health" }),
        h("span.hint", { text: `over its last ${plural(health.games, "measured game")}: ${plural(health.decisions, "decision")} answered` })),
      h("div.health-grid", {},
        h("div", {}, h("h3", { text: "Think time" }), think),
        h("div", {}, h("h3", { text: "What went wrong" }), tiles,
          h("p.games-lost", {}, "Games lost to these: ", h("b", { "data-testid": "health-games-lost", text: health.games_lost })))),
      health.lost.length ? [
        h("h3", { text: "Games lost" }),
        h("div.table-wrap", {}, h("table", { "data-testid": "health-lost" },
          h("thead", {}, h("tr", {}, h("th", { text: "Game" }), h("th", { text: "Cause" }), h("th.num", { text: "Ply" }),
            h("th", { text: "Kind" }), h("th", { text: "Ended" }))),
          h("tbody", {}, lostRows)))] : null,
      h("h3", { text: "Incidents" }),
      health.incidents.length
        ? h("div.table-wrap", {}, h("table.incidents", { "data-testid": "health-incidents" },
          h("thead", {}, h("tr", {}, h("th", { text: "Game" }), h("th.num", { text: "Ply" }), h("th", { text: "What" }),
            h("th.num", { text: "After", title: "since the decision was sent (or how long it was away)" }), h("th", { text: "Sent" }))),
          h("tbody", {}, incidentRows)))
        : h("p.empty", { "data-testid": "health-no-incidents", text: "No incident in these games." }),
      health.incidents.length >= 50 ? h("p.empty", { text: "The 50 most recent are listed; all are counted above." }) : null);
  }

  // A bot's profile, read again when one of its games starts or ends on the stream, after the
  // stream reconnects, and every BOT_POLL_MS while the tab is shown (the default stream tells of
  // a sample of games), at most every BOT_REFRESH_MS: a bot author leaves it open.
  function botPage(root, name) {
    const mine = name.toLowerCase();
    const view = {
      alive: true, due: null, last: Date.now(), poll: null,
      destroy() { this.alive = false; clearTimeout(this.due); clearInterval(this.poll); },
      refresh() {
        if (this.due !== null || !this.alive) return;
        this.due = setTimeout(() => {
          this.due = null;
          this.last = Date.now();
          showBot(root, name, this, true);
        }, Math.max(0, this.last + BOT_REFRESH_MS - Date.now()));
      },
      resync() { this.refresh(); },
      onGame(msg) { if (msg.game.players.some((p) => p.toLowerCase() === mine)) this.refresh(); },
    };
    view.poll = setInterval(() => { if (document.visibilityState === "visible") view.refresh(); }, BOT_POLL_MS);
    showBot(root, name, view, false);
    return view;
  }

  async function showBot(root, name, view, again) {
    if (!again) root.replaceChildren(h("p.empty", { text: "Loading…" }));
    const { status, body } = await getJson(`/api/bots/${enc(name)}`);
    if (!view.alive || (again && status !== 200)) return;  // read again: what is shown stays
    if (status !== 200) {
      root.replaceChildren(h("p.empty", { text: status === 404 ? `There is no bot named ${name}.` : `The bot could not be loaded (${status}).` }),
        h("a.back", { href: "#/", text: "← Ladder" }));
      return;
    }
    const s = body.standing;
    const change = new Map(body.history.map((e) => [e.game_id, e.rating_after - e.rating_before]));
    const running = body.games.filter((g) => g.status === "running" && g.kind === "ladder").length;
    const facts = s ? [
      ["Rank", `#${s.rank}`, "rank"], ["95% interval", interval(s.low, s.high), "interval"],
      ["Elo (live)", `${round(s.elo)}${s.provisional ? " · provisional" : ""}`, "elo"],
      ["Rated games", s.games, "rated-games", RATED_NOTE],
      ["Last hour", `${plural(s.recent_games, "ladder game")} paired (${running} running)`, "recent-games", RECENT_NOTE],
      ["Opponents met", s.opponents, "opponents"], ["W–D–L", `${s.wins}–${s.draws}–${s.losses}`, "wdl"],
    ] : [];
    const rows = body.games.map((g) => {
      const seat = g.players.indexOf(body.name);
      const opponent = g.players[1 - seat];
      const [cls, text] = g.status === "running" ? ["", "playing"] : outcome(g, body.name);
      const delta = change.get(g.game_id);
      return h("tr", { "data-testid": "bot-game" },
        h("td", {}, h("a", { href: `#/game/${enc(g.game_id)}`, text: opponent ? `vs ${opponent}` : g.game_id })),
        h(`td.outcome.${cls || "none"}`, { text }),
        h("td.num", { text: g.result && g.result.end_reason !== "aborted" ? `${g.result.scores[seat]}–${g.result.scores[1 - seat]}` : "" }),
        h(`td.num${delta > 0 ? ".up" : delta < 0 ? ".down" : ""}`, { text: delta === undefined ? "" : `${delta > 0 ? "+" : ""}${delta.toFixed(1)}` }),
        h("td", { text: KIND[g.kind] || g.kind }),
        h("td", {}, timeEl(g.ended || g.started)));
    });
    root.replaceChildren(
      h("div.game-head", {},
        h("a.back", { href: "#/", text: "← Ladder" }),
        h("h2", {}, h("span.online", { "data-online": body.connected, "data-seeking": body.seeking }), body.name),
        h("span.badge", { "data-testid": "bot-state", text: body.state }),
        body.seeking ? h("span.badge.live", { text: "seeking" }) : null),
      h("div.profile-grid", {},
        h("section.panel", {},
          h("div.big-rating", { "data-testid": "bot-rating", title: s ? RATING_NOTE : null, text: s ? round(s.rating) : "—" }),
          h("div.empty", { text: s ? "Bradley–Terry rating, which ranks the ladder" : "not in the standings" }),
          h("dl.table-info", {}, facts.map(([k, v, id, title]) => [h("dt", { title, text: k }), h("dd", { "data-testid": `bot-${id}`, title, text: v })]),
            h("dt", { text: "Registered" }), h("dd", {}, timeEl(body.created))),
          s ? h("a.around", { "data-testid": "bot-around", href: `#/?bot=${enc(body.name)}`, text: "Its place in the standings →" }) : null),
        h("section.panel", {},
          h("div.panel-head", {}, h("h2", { text: "Elo (live)" }),
            h("span.hint", { text: `after each of ${body.history_before === null ? "" : "its last "}${plural(body.history.length, "rated game")}; it depends on their order` })),
          sparkline(body.history),
          h("div.panel-head", { style: "margin-top: 1rem" }, h("h2", { text: "Recent games" })),
          body.games.length
            ? h("div.table-wrap", {}, h("table", { "data-testid": "bot-games" },
              h("thead", {}, h("tr", {}, h("th", { text: "Game" }), h("th", { text: "Result" }), h("th.num", { text: "Score" }),
                h("th.num", { text: "Elo ±" }), h("th", { text: "Kind" }), h("th", { text: "When" }))),
              h("tbody", {}, rows)))
            : h("p.empty", { text: "No game yet." }))),
    );
    if (body.health) root.append(healthPanel(body.name, body.health, body.games));
  }

  // ---------------------------------------------------------------- tournaments

  const FORMATS = { round_robin: "round robin", gauntlet: "gauntlet", swiss: "Swiss" };
  const formatName = (f) => FORMATS[f] || f;
  /** Scores are wins plus half the draws: "3", "2.5". */
  const points = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1));
  const playedOf = (p) => `${p.played} / ${p.planned}`;

  function percent(p) {
    if (p === null || p === undefined) return "";
    if (p > 0.995) return ">99%";
    if (p < 0.005) return "<1%";
    return `${Math.round(p * 100)}%`;
  }

  /** A <progress> bar at played / planned (written only when it changes, so it moves only forward). */
  function setProgress(bar, p) {
    const max = Math.max(p.planned, 1);
    if (bar.max !== max) bar.max = max;
    if (bar.value !== p.played || !bar.hasAttribute("value")) bar.value = p.played;
    bar.title = `${p.played} of ${plural(p.planned, "game")} played`;
  }

  function stateBadge(node, state) {
    node.className = `badge state ${state}`;
    setText(node, state);
  }

  const GAMES_PAGE = 50;
  const GAMES_MAX = 500;  // the most GET /api/tournaments/{id}/games gives at once

  function tournamentGameItem() {
    return h("li", { "data-testid": "t-game" }, h("a", { "data-testid": "t-game-link" }));
  }

  /** A game of the tournament's list: its players (the winner marked), score, how it ended,
   *  its place in the schedule; the link opens it live, or its replay once it is over. */
  function updateTournamentGameItem(li, g) {
    const stamp = `${g.status}/${g.ply}/${g.ended}`;
    if (li.dataset.stamp === stamp) return;
    li.dataset.stamp = stamp;
    li.dataset.gameId = g.game_id;
    li.dataset.status = g.status;
    li.dataset.slot = g.slot;
    const a = li.firstChild;
    a.href = gameHref(g.game_id);
    a.title = g.status === "running" ? "watch it live" : "its replay, move by move";
    const win = g.result ? g.result.winner : null;
    const decided = g.result && win !== null && g.result.end_reason !== "aborted";
    const name = (seat) => h(`span${decided ? (win === seat ? ".win" : ".lose") : ""}`, { text: g.players[seat] });
    const [headline, , why] = g.result ? resultWords(g.result, g.players) : ["", "", ""];
    a.replaceChildren(
      h("span.g-players", {}, name(0), h("span.vs", { text: "vs" }), name(1)),
      h("span.g-score", { "data-testid": "t-game-score" },
        g.status === "running" ? h("span.badge.live", { text: "live" }) : seatScores(g.result) || "—"),
      h("span.g-meta", {},
        h("span", { text: `game ${g.slot + 1} · round ${g.round}` }),
        headline ? h("span", { "data-testid": "t-game-result", text: headline }) : null,
        why ? h("span", { "data-testid": "t-game-reason", "data-reason": g.result.end_reason, text: why }) : null,
        timeEl(g.status === "running" ? g.started : g.ended)));
  }

  /** A TournamentView (from /live) in the shape GET /api/tournaments lists. */
  const infoOf = (v) => ({
    tournament_id: v.tournament_id, name: v.name, format: v.format, state: v.state,
    participants: v.definition.participants, created: v.created, started: v.started, ended: v.ended, progress: v.progress,
  });

  /** #/tournaments: every tournament with its progress, from GET /api/tournaments, kept
   *  current by the ``tournament`` messages of /live. */
  /** How often an open tournament list is read again: /live tells of running and paused
   *  tournaments only, not of one created or cancelled before it started. */
  const LIST_REFRESH_MS = 5000;
  /** The newest tournaments listed at first, and how many more "Older tournaments" adds; the
   *  list reads them all again at each refresh, so it shows at most LIST_MAX (the API's page). */
  const LIST_PAGE = 50;
  const LIST_MAX = 500;

  class TournamentList {
    constructor(root) {
      this.root = root;
      this.alive = true;
      this.items = null;
      this.limit = LIST_PAGE;
      this.older = false;  // the last read was a full page: older tournaments exist
      this.loading = null;
      this.again = false;
      this.more = $("[data-testid=tournaments-more]", root);
      this.more.onclick = () => {
        this.limit = Math.min(LIST_MAX, this.limit + LIST_PAGE);
        this.load();
      };
      this.load();
      this.refresh = setInterval(() => this.load(), LIST_REFRESH_MS);
    }

    destroy() {
      this.alive = false;
      clearInterval(this.refresh);
      this.more.onclick = null;
    }

    /** Fetch the list, as far as it is shown (once at a time; a request made meanwhile
     *  fetches again after). */
    async load() {
      if (this.loading) {
        this.again = true;
        return;
      }
      this.loading = getJson(`/api/tournaments?limit=${this.limit}`);
      const { status, body, next } = await this.loading;
      this.loading = null;
      if (!this.alive) return;
      if (status === 200) {
        this.items = body;
        this.older = next !== null;
        this.render();
      }
      if (this.again) {
        this.again = false;
        this.load();
      }
    }

    resync() {
      this.load();
    }

    onTournament(view) {
      if (!this.items || this.loading) return this.load();
      const i = this.items.findIndex((t) => t.tournament_id === view.tournament_id);
      if (i < 0) {
        const last = this.items[this.items.length - 1];
        if (this.older && last && view.created < last.created) return;  // older than the list shows
        return this.load();  // a new one: the list says where it goes
      }
      this.items[i] = infoOf(view);
      this.render();
    }

    render() {
      const tbody = $("tbody", this.root);
      reconcile(tbody, this.items, (t) => t.tournament_id, () => {
        const cell = (testid, cls) => h(`td${cls ? "." + cls : ""}`, { "data-testid": testid });
        const tr = h("tr", { "data-testid": "tournament-row" },
          cell("row-name"), cell("row-format"), cell("row-state"), cell("row-participants", "num"),
          cell("row-progress", "progress-cell"), cell("row-started", "hide-narrow"));
        tr.children[0].append(h("a", { href: "#" }));
        tr.children[2].append(h("span.badge"));
        tr.children[4].append(h("progress.bar"), h("span.played", { "data-testid": "row-played" }));
        return tr;
      }, (tr, t) => {
        const [name, format, state, count, progress, started] = tr.children;
        tr.dataset.tournamentId = t.tournament_id;
        const link = name.firstChild;
        link.href = `#/tournaments/${enc(t.tournament_id)}`;
        link.textContent = t.name;
        setText(format, formatName(t.format));
        stateBadge(state.firstChild, t.state);
        setText(count, String(t.participants.length));
        setProgress(progress.firstChild, t.progress);
        setText(progress.lastChild, playedOf(t.progress));
        progress.title = `${t.progress.running} running · ${plural(t.progress.forfeits, "forfeit")}`;
        const when = t.started || t.created;
        if (started.dataset.when !== when) {
          started.dataset.when = when;
          started.replaceChildren(t.started ? timeEl(t.started) : h("span.empty", { text: "not started" }));
        }
      });
      $("[data-testid=tournaments-empty]", this.root).hidden = this.items.length > 0;
      this.more.parentElement.hidden = !this.older || this.limit >= LIST_MAX;
    }
  }

  /** #/tournaments/ID: one tournament from GET /api/tournaments/{id}, then live from /live. */
  class TournamentPage {
    constructor(root, id) {
      this.root = root;
      this.id = id;
      this.alive = true;
      this.view = null;
      this.running = new Map();
      this.fromLive = false;
      this.deadlines = new Map();
      this.crossKey = null;
      this.games = [];  // GET /api/tournaments/{id}/games, its first pages ("more" reads another)
      this.gamesNext = null;
      this.gamesKey = null;
      this.gamesLoading = false;
      this.gamesAgain = false;
      this.timer = setInterval(() => this.tick(), 1000);
      root.replaceChildren(h("p.empty", { text: "Loading the tournament…" }));
      this.load();
    }

    destroy() {
      this.alive = false;
      clearInterval(this.timer);
    }

    async load() {
      this.fromLive = false;
      const { status, body } = await getJson(`/api/tournaments/${enc(this.id)}`);
      if (!this.alive) return;
      if (status !== 200) {
        if (this.view) return;
        this.root.replaceChildren(
          h("p.empty", { text: status === 404 ? `There is no tournament ${this.id}.` : `The tournament could not be loaded (${status}).` }),
          h("a.back", { href: "#/tournaments", text: "← Tournaments" }));
        return;
      }
      if (!this.fromLive) this.show(body);  // a /live message that came meanwhile is at least as new
    }

    resync() {
      this.gamesKey = null;
      this.load();
    }

    onTournament(view) {
      if (view.tournament_id !== this.id) return;
      this.fromLive = true;
      this.show(view);
    }

    /** ``game_started`` / ``game_ended`` of /live: the running list moves before the
     *  tournament's own (coalesced) message arrives. */
    onGame(msg) {
      const g = msg.game;
      if (!this.view || g.tournament_id !== this.id) return;
      if (msg.type === "game_started") this.running.set(g.game_id, g);
      else this.running.delete(g.game_id);
      this.renderRunning();
    }

    layout(v) {
      const panel = (title, testid, ...body) => h("section.panel", {},
        h("div.panel-head", {}, h("h2", { text: title }), testid ? h("span.count", { "data-testid": testid }) : null), body);
      this.nameEl = h("span", { "data-testid": "tournament-name" });
      this.stateEl = h("span.badge", { "data-testid": "tournament-state" });
      this.formatEl = h("span.format", { "data-testid": "tournament-format" });
      this.bar = h("progress.bar.big", { "data-testid": "tournament-progress", max: 1, value: 0 });
      this.playedEl = h("span.played", { "data-testid": "tournament-played" });
      this.progressInfo = h("div.progress-info", { "data-testid": "tournament-progress-info" });
      this.facts = h("dl.table-info");
      this.waitingList = h("ul.waiting", { "data-testid": "tournament-waiting" });
      this.waitingEmpty = h("p.empty", { "data-testid": "tournament-waiting-empty",
        text: "Nobody: no participant whose game is due is away or busy with other games." });
      this.runningList = h("ul.games", { "data-testid": "tournament-running" });
      this.runningEmpty = h("p.empty", { "data-testid": "tournament-running-empty", text: "No game of it is running." });
      this.gameList = h("ul.games.t-games", { "data-testid": "tournament-games" });
      this.gamesEmpty = h("p.empty", { "data-testid": "tournament-games-empty", text: "No game of it has started yet." });
      this.gamesMore = h("button.more", { type: "button", "data-testid": "tournament-games-more", hidden: true,
        text: "More games", onclick: () => this.moreGames() });
      this.ranking = h("tbody");
      this.cross = h("table.crosstable", { "data-testid": "crosstable" });
      const base = `/api/tournaments/${enc(this.id)}`;
      const rankHead = [
        ["#", "num", "rank"],
        ["Bot", "", null],
        ["Rating", "num", "Maximum-likelihood Bradley–Terry rating over this tournament's games (Elo scale, the pool's average at 1500); the ranking is ordered by it"],
        ["95% interval", "num", "The rating's 95% interval against the pool's average"],
        ["Score", "num", "Wins plus half the draws, forfeits included"],
        ["Games", "num", null],
        ["W–D–L", "num", "Wins – draws – losses"],
        ["Forfeits", "num", "Games it lost because it was not connected when they were due"],
        ["Stronger than next", "num", "The likelihood that this bot is stronger than the next one in the ranking"],
      ];
      this.root.replaceChildren(
        h("div.game-head", {},
          h("a.back", { href: "#/tournaments", text: "← Tournaments" }),
          h("h2", {}, this.nameEl),
          this.stateEl, this.formatEl,
          h("code.game-id", { title: "tournament id", text: v.tournament_id })),
        h("div.tournament-grid", {},
          h("div.t-main", {},
            h("section.panel", {},
              h("div.panel-head", {}, h("h2", { text: "Progress" }), this.playedEl),
              this.bar, this.progressInfo, this.facts),
            h("section.panel", {},
              h("div.panel-head", {}, h("h2", { text: "Ranking" }),
                h("span.hint", {},
                  h("a", { "data-testid": "results-csv", href: `${base}/results?format=csv`, text: "results (CSV)" }), " · ",
                  h("a", { "data-testid": "results-json", href: `${base}/results`, text: "JSON" }), " · ",
                  h("a", { "data-testid": "records-jsonl", href: `${base}/records`, text: "game records (JSON Lines)" }))),
              h("div.table-wrap", {}, h("table.ranking", { "data-testid": "tournament-ranking" },
                h("thead", {}, h("tr", {}, rankHead.map(([label, cls, title]) =>
                  h(`th${cls ? "." + cls : ""}`, { title, text: label })))),
                this.ranking))),
            h("section.panel", {},
              h("div.panel-head", {}, h("h2", { text: "Crosstable" }),
                h("span.hint", { text: "each row's wins–draws–losses and score against each column" })),
              h("div.table-wrap", {}, this.cross))),
          h("aside.side", {},
            this.runningPanel = panel("Playing now", "tournament-running-count", this.runningList, this.runningEmpty),
            this.waitingPanel = panel("Waiting for", null, this.waitingList, this.waitingEmpty),
            panel("Games", "tournament-games-count", this.gameList, this.gamesEmpty, this.gamesMore))),
      );
      this.runningPanel.dataset.testid = "tournament-running-panel";
      this.waitingPanel.dataset.testid = "tournament-waiting-panel";
    }

    show(v) {
      if (!this.view) this.layout(v);
      this.view = v;
      document.title = `${v.name} · Mandala Arena`;
      this.root.dataset.state = v.state;
      setText(this.nameEl, v.name);
      stateBadge(this.stateEl, v.state);
      setText(this.formatEl, formatName(v.format));
      const p = v.progress;
      setProgress(this.bar, p);
      setText(this.playedEl, playedOf(p));
      setText(this.progressInfo, `${p.running} running · ${plural(p.forfeits, "forfeit")}`
        + (v.format === "swiss" ? ` · round ${v.rounds} of ${v.definition.rounds}` : ""));
      const d = v.definition;
      this.facts.replaceChildren(...[
        ["Participants", d.participants.length],
        d.bot_under_test ? ["Bot under test", d.bot_under_test] : null,
        ["Games per pairing", d.games_per_pairing],
        ["Time per decision", `${d.decision_ms} ms`],
        ["At once", `${d.max_concurrent} games, ${d.max_games_per_bot} per bot`],
        ["Grace", `${d.grace_s} s`],
        ["Started", v.started ? timeEl(v.started) : "not yet"],
        v.ended ? [v.state === "cancelled" ? "Cancelled" : "Ended", timeEl(v.ended)] : null,
      ].filter(Boolean).flatMap(([k, value]) => [h("dt", { text: k }), h("dd", {}, value)]));
      // Nothing plays in a tournament that is over, and nobody is waited for.
      const over = v.state === "finished" || v.state === "cancelled";
      this.runningPanel.hidden = over;
      this.waitingPanel.hidden = over;
      this.running = new Map(v.running.map((g) => [g.game_id, g]));
      this.renderRunning();
      this.renderWaiting(v);
      this.renderRanking(v.ranking);
      this.renderCross(v.ranking.map((r) => r.bot), v.crosstable);
      const key = `${v.state}/${p.played}/${p.running}/${p.forfeits}`;
      if (key !== this.gamesKey) {
        this.gamesKey = key;
        this.loadGames();
      }
    }

    /** Read again the part of the list that can still change, and keep the rest: a game that
     *  is over stays as it is, so the list is read from the first game still running, or the
     *  first slot not listed yet (a later slot may start before an earlier one), on. A list read
     *  to its end is read past its last slot for the games that started since. One request at a
     *  time; a change meanwhile reads again after it. */
    async loadGames() {
      if (this.gamesLoading) {
        this.gamesAgain = true;
        return;
      }
      const games = this.games;
      let from = games.findIndex((g, i) => g.status === "running" || g.slot > (i ? games[i - 1].slot : -1) + 1);
      if (from < 0) from = games.length;
      while (from > 0 && from < games.length && games[from - 1].slot === games[from].slot) from -= 1;
      if (from === games.length && this.gamesNext) return;  // every game listed is over; "more" reads on
      const after = from ? games[from - 1].slot : -1;
      const limit = Math.min(GAMES_MAX, Math.max(GAMES_PAGE, games.length - from));
      this.gamesLoading = true;
      const { status, body, next } = await getJson(`/api/tournaments/${enc(this.id)}/games?limit=${limit}&after_slot=${after}`);
      this.gamesLoading = false;
      if (!this.alive) return;
      if (status === 200) {
        const last = body.length ? body[body.length - 1].slot : after;
        const kept = next ? games.slice(from).filter((g) => g.slot > last) : [];
        this.games = games.slice(0, from).concat(body, kept);
        if (!kept.length) this.gamesNext = next;  // else "more" reads on after the kept games, as before
        this.renderGames();
      }
      if (this.gamesAgain) {
        this.gamesAgain = false;
        this.loadGames();
      }
    }

    /** The next page, appended. */
    async moreGames() {
      if (!this.gamesNext || this.gamesLoading) return;
      this.gamesLoading = true;
      const { status, body, next } = await getJson(this.gamesNext);
      this.gamesLoading = false;
      if (!this.alive) return;
      if (status === 200) {
        const known = new Set(this.games.map((g) => g.game_id));
        this.games = this.games.concat(body.filter((g) => !known.has(g.game_id)));
        this.gamesNext = next;
        this.renderGames();
      }
      if (this.gamesAgain) {
        this.gamesAgain = false;
        this.loadGames();
      }
    }

    renderGames() {
      reconcile(this.gameList, this.games, (g) => g.game_id, tournamentGameItem, updateTournamentGameItem);
      this.gamesEmpty.hidden = this.games.length > 0;
      this.gamesMore.hidden = !this.gamesNext;
      const count = $("[data-testid=tournament-games-count]", this.root);
      count.textContent = this.gamesNext ? `${this.games.length}+` : String(this.games.length);
    }

    renderRunning() {
      const running = [...this.running.values()].sort((a, b) => (a.started < b.started ? -1 : 1));
      reconcile(this.runningList, running, (g) => g.game_id, gameItem("tournament-game"), updateGameItem);
      this.runningEmpty.hidden = running.length > 0;
      $("[data-testid=tournament-running-count]", this.root).textContent = String(running.length);
    }

    /** Who a due game waits for: a bot that is away (not connected: it forfeits when its
     *  grace runs out) or busy (connected, every slot taken by other games: it never forfeits). */
    renderWaiting(v) {
      const now = Date.now();
      const away = (w) => (w.reason || "away") === "away";
      this.deadlines = new Map(v.waiting.filter(away).map((w) => [w.bot, now + w.forfeits_in_s * 1000]));
      reconcile(this.waitingList, v.waiting, (w) => w.bot,
        () => h("li", { "data-testid": "waiting-bot" }, h("span.who"), h("span.what", { "data-testid": "waiting-what" }),
          h("span.countdown", { "data-testid": "forfeits-in" })),
        (li, w) => {
          const [who, what, countdown] = li.children;
          li.dataset.bot = w.bot;
          li.dataset.reason = away(w) ? "away" : "busy";
          if (who.textContent !== w.bot) who.replaceChildren(botLink(w.bot));
          if (away(w)) {
            what.replaceChildren(" — away since ", timeEl(w.since));
            countdown.dataset.seconds = w.forfeits_in_s;
          } else {
            const busy = w.busy_with || [];
            what.replaceChildren();
            append(what, [" — busy: ",
              busy.length ? busy.map((b, i) => [i ? ", " : null,
                h("a", { "data-testid": "busy-game", "data-game-id": b.game_id, href: gameHref(b.game_id),
                  text: `${KIND[b.kind] || b.kind} game vs ${b.opponent}` })]) : "its games",
              h("span.since", {}, " · since ", timeEl(w.since))]);
            delete countdown.dataset.seconds;
            countdown.textContent = "";
          }
        });
      this.waitingEmpty.hidden = v.waiting.length > 0;
      this.tick();
    }

    /** Count the away bots' grace down between messages (the server sends none for it). */
    tick() {
      if (!this.view) return;
      const counting = this.view.state === "running";
      for (const li of this.waitingList.children) {
        const countdown = li.lastChild;
        if (li.dataset.reason !== "away") continue;
        const left = Math.max(0, (this.deadlines.get(li.dataset.bot) - Date.now()) / 1000);
        const shown = counting ? left : Number(countdown.dataset.seconds);
        countdown.textContent = shown > 0 ? ` · forfeits in ${Math.ceil(shown)} s` : " · forfeits its games as they come due";
      }
    }

    renderRanking(ranking) {
      reconcile(this.ranking, ranking, (r) => r.bot, () => {
        const cell = (testid, cls) => h(`td.${cls.split(" ").join(".")}`, { "data-testid": testid });
        return h("tr", { "data-testid": "ranking-row" },
          cell("rank", "num rank"), cell("bot", "bot-cell"), cell("rating", "num rating"), cell("interval", "num interval"),
          cell("score", "num"), cell("games", "num"), cell("wdl", "num wdl"), cell("forfeits", "num"),
          cell("stronger", "num"));
      }, (tr, r) => {
        const [rank, bot, rating, range, score, games, wdl, forfeits, stronger] = tr.children;
        tr.dataset.bot = r.bot;
        setText(rank, String(r.rank));
        if (bot.textContent !== r.bot) bot.replaceChildren(botLink(r.bot));
        setText(rating, round(r.rating));
        setText(range, interval(r.low, r.high));
        setText(score, points(r.score));
        setText(games, String(r.games));
        setText(wdl, `${r.wins}–${r.draws}–${r.losses}`);
        setText(forfeits, String(r.forfeits));
        setText(stronger, percent(r.stronger_than_next));
        stronger.title = r.stronger_than_next === null ? ""
          : `${r.bot} is stronger than the next in the ranking with likelihood ${(100 * r.stronger_than_next).toFixed(1)}%`;
      });
    }

    /** Rows and columns are the participants in ranking order; the diagonal is blank. */
    renderCross(bots, table) {
      const key = JSON.stringify([bots, table]);
      if (key === this.crossKey) return;
      this.crossKey = key;
      const head = h("tr", {}, h("th", { text: "" }),
        bots.map((b, i) => h("th.num.col", { "data-testid": "cross-col", "data-bot": b, title: b }, h("span.n", { text: `${i + 1}` }), " ", b)));
      const rows = bots.map((a, i) => h("tr", { "data-testid": "cross-row", "data-bot": a },
        h("th.row", {}, h("span.n", { text: `${i + 1}` }), " ", botLink(a)),
        bots.map((b) => {
          if (a === b) return h("td.diag", { "data-testid": "cross-self", "data-bot": a });
          const c = (table[a] || {})[b];
          if (!c) return h("td.num.cell.none", { "data-testid": "cross-cell", "data-bot": a, "data-opponent": b, "data-games": 0, title: `${a} and ${b} have not played yet` });
          const cls = c.score * 2 > c.games ? ".ahead" : c.score * 2 < c.games ? ".behind" : "";
          return h(`td.num.cell${cls}`, {
            "data-testid": "cross-cell", "data-bot": a, "data-opponent": b, "data-games": c.games,
            title: `${a} against ${b}: ${plural(c.games, "game")}, ${plural(c.wins, "win")}, ${plural(c.draws, "draw")}, ${c.losses} loss${c.losses === 1 ? "" : "es"}, score ${points(c.score)}`,
          }, h("span.cw", { "data-testid": "cross-wdl", text: `${c.wins}-${c.draws}-${c.losses}` }), " ",
          h("span.cs", { "data-testid": "cross-score", text: points(c.score) }));
        })));
      this.cross.replaceChildren(h("thead", {}, head), h("tbody", {}, rows));
    }
  }

  // ---------------------------------------------------------------- routes

  let current = null;

  /** A part of the address, decoded; as it is when it is no escape (a link cut off mid-``%``). */
  function decoded(part) {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  }

  function route() {
    const hash = location.hash || "#/";
    const game = hash.match(/^#\/games?\/([^/?#]+)/);
    // Another position or other eyes in the game on show: no need to load it again.
    if (game && current instanceof GameView && current.id === decoded(game[1])) {
      current.navigate(gameQuery(hash));
      return;
    }
    if (current) current.destroy();
    current = null;
    for (const section of document.querySelectorAll("main > .route")) section.hidden = true;
    let m;
    let nav = null;
    if (game) {
      const id = decoded(game[1]);
      document.title = `Game ${id} · Mandala Arena`;
      $("#game").hidden = false;
      current = new GameView($("#game"), id, gameQuery(hash));
    } else if ((m = hash.match(/^#\/bot\/([^/?#]+)/))) {
      const name = decoded(m[1]);
      document.title = `${name} · Mandala Arena`;
      $("#bot").hidden = false;
      current = botPage($("#bot"), name);
    } else if ((m = hash.match(/^#\/tournaments\/([^/?#]+)/))) {
      const id = decoded(m[1]);
      document.title = `Tournament ${id} · Mandala Arena`;
      $("#tournament").hidden = false;
      current = new TournamentPage($("#tournament"), id);
      nav = "tournaments";
    } else if (/^#\/tournaments\/?$/.test(hash)) {
      document.title = "Tournaments · Mandala Arena";
      $("#tournaments").hidden = false;
      current = new TournamentList($("#tournaments"));
      nav = "tournaments";
    } else if (hash === "#/connect") {
      document.title = "Connect a bot · Mandala Arena";
      $("#connect").hidden = false;
      nav = "connect";
    } else {
      document.title = "Mandala Arena";
      $("#home").hidden = false;
      nav = "home";
      const bot = hash.startsWith("#/?") ? new URLSearchParams(hash.slice(3)).get("bot") : null;
      if (bot) findBot(bot);
    }
    for (const a of document.querySelectorAll(".top nav a")) {
      if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    window.scrollTo(0, 0);
  }

  function start() {
    const base = `${location.protocol}//${location.host}`;
    for (const el of document.querySelectorAll(".base-url")) el.textContent = base;
    for (const el of document.querySelectorAll(".ws-url")) el.textContent = wsUrl("/ws");
    window.addEventListener("hashchange", route);
    setupStandings();
    route();
    connectLive();
    setInterval(refreshTimes, 30000);
  }

  start();
})();

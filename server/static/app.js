// Mandala Arena's page: the ladder live from /live, games live from /ws (as a spectator),
// finished games step by step from /api/games/{id}/replay, bot profiles from /api/bots/{name}.
// Plain JavaScript, no build step. Routes are hashes: #/, #/game/ID, #/bot/NAME, #/connect.
"use strict";

(() => {
  const COLORS = ["red", "orange", "yellow", "green", "purple", "black"];
  const RECENT_MAX = 20;
  const KIND = { ladder: "ladder", qualification: "qualification", challenge: "challenge", admin: "organizer" };

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

  async function getJson(path) {
    const resp = await fetch(path, { headers: { Accept: "application/json" } });
    const body = await resp.json().catch(() => null);
    return { status: resp.status, body };
  }

  // ---------------------------------------------------------------- words

  const botLink = (name) => h("a.bot", { href: `#/bot/${enc(name)}`, text: name });

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
      : result.end_reason === "aborted" ? "stopped by the server"
      : REASONS[result.end_reason] || result.end_reason;
    if (result.end_reason === "aborted") return ["Aborted", "", why];
    const [w, l] = result.winner === 1 ? [1, 0] : [0, 1];  // the winner's score first
    const score = `${result.scores[w]}–${result.scores[l]}`;
    return [result.winner === null ? "Draw" : `${players[result.winner]} wins`, score, why];
  }

  // ---------------------------------------------------------------- the live stream (/live)

  const live = { ws: null, delay: 1000, running: new Map(), recent: [], standings: [] };

  function setLiveStatus(state, label) {
    const el = $("[data-testid=live-status]");
    el.dataset.state = state;
    $(".label", el).textContent = label;
  }

  function connectLive() {
    setLiveStatus("connecting", "connecting…");
    const ws = new WebSocket(wsUrl("/live"));
    live.ws = ws;
    ws.onopen = () => {
      live.delay = 1000;
      setLiveStatus("open", "live");
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

  function onLive(msg) {
    if (msg.type === "standings") {
      live.standings = msg.standings;
      renderStandings(msg.paused, msg.standings);
    } else if (msg.type === "games") {
      live.running = new Map(msg.running.map((g) => [g.game_id, g]));
      live.recent = msg.recent.slice(0, RECENT_MAX);
      renderGames();
    } else if (msg.type === "game_started") {
      live.running.set(msg.game.game_id, msg.game);
      renderGames();
    } else if (msg.type === "game_ended") {
      live.running.delete(msg.game.game_id);
      if (msg.game.status === "finished") {
        live.recent = [msg.game, ...live.recent.filter((g) => g.game_id !== msg.game.game_id)].slice(0, RECENT_MAX);
      }
      renderGames();
    } else if (msg.type === "health") {
      renderHealth(msg);
    }
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

  function makeStandingRow() {
    const cell = (testid, cls) => h(`td.${cls.split(" ").join(".")}`, { "data-testid": testid });
    return h("tr", { "data-testid": "standing-row" },
      cell("rank", "num rank"), cell("bot", "bot-cell"), cell("rating", "num rating"),
      cell("interval", "num interval hide-narrow"), cell("games", "num hide-narrow"),
      cell("opponents", "num hide-narrow"), cell("wdl", "num wdl"));
  }

  function updateStandingRow(tr, s) {
    const [rank, bot, rating, interval, games, opponents, wdl] = tr.children;
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
    setText(interval, `${round(s.bt_low)}–${round(s.bt_high)}`);
    interval.title = `Bradley–Terry ${round(s.bt_rating)}, 95% interval ${round(s.bt_low)} to ${round(s.bt_high)}`;
    setText(games, String(s.games));
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

  function renderStandings(paused, standings) {
    $("[data-testid=paused]").hidden = !paused;
    reconcile($("[data-testid=standings] tbody"), standings, (s) => s.bot, makeStandingRow, updateStandingRow);
    $("[data-testid=standings-empty]").hidden = standings.length > 0;
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
    const score = g.status === "running" ? h("span.badge.live", { text: "live" })
      : g.result && g.result.end_reason !== "aborted" ? `${g.result.scores[0]}–${g.result.scores[1]}` : "—";
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

  function renderGames() {
    const running = [...live.running.values()].sort((a, b) => (a.started < b.started ? 1 : -1));
    reconcile($("[data-testid=running-games]"), running, (g) => g.game_id, gameItem("running-game"), updateGameItem);
    reconcile($("[data-testid=recent-games]"), live.recent, (g) => g.game_id, gameItem("recent-game"), updateGameItem);
    $("[data-testid=running-count]").textContent = String(running.length);
    $("[data-testid=running-empty]").hidden = running.length > 0;
    $("[data-testid=recent-empty]").hidden = live.recent.length > 0;
  }

  // ---------------------------------------------------------------- the board

  function playerPanel(view, players, seat, over) {
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
    return h(`section.panel.player${moving ? ".to-move" : ""}`, { "data-testid": `player-${seat}`, "data-seat": seat },
      h("div.who", {}, h("span.name", {}, botLink(players[seat])), h("span.turn-tag", { text: tag })),
      h("div.stats", {},
        h("span.stat", {}, "Hand ", h("b", { "data-testid": `hand-size-${seat}`, text: p.hand_size })),
        h("span.stat", {}, "Cup ", h("b", { "data-testid": `cup-size-${seat}`, text: p.cup_size }))),
      h("div.river", { "data-testid": `river-${seat}`, "data-count": p.river.length, title: "River, slots 1 to 6" }, slots),
      h("div.cup", { "data-testid": `cup-${seat}` }, "In the cup:",
        claimed, p.cup_unknown ? [h("span.chip.sm.hidden-card", { title: "the two starting cards: nobody else has seen them", text: p.cup_unknown }), h("span.unseen", { text: "unseen" })] : null,
        claimed.length || p.cup_unknown ? null : "nothing"),
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

  function renderBoard(node, view, before, players, ply, over) {
    node.dataset.ply = ply;
    node.replaceChildren(
      playerPanel(view, players, 1, over),
      h("div.mandalas", {}, mandalaPanel(view, before, players, 0), mandalaPanel(view, before, players, 1)),
      playerPanel(view, players, 0, over),
    );
  }

  // ---------------------------------------------------------------- a game page

  class GameView {
    constructor(root, id) {
      this.root = root;
      this.id = id;
      this.alive = true;
      this.mode = "loading";
      this.ws = null;
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
      if (status !== 200) {
        this.root.replaceChildren(h("p.empty", { text: status === 404 ? `There is no game ${this.id}.` : `The game could not be loaded (${status}).` }),
          h("a.back", { href: "#/", text: "← Ladder" }));
        return;
      }
      this.players = body.players;
      this.layout(body);
      if (body.status === "running") this.watch();
      else this.loadReplay();
    }

    layout(game) {
      const [p0, p1] = game.players;
      this.statusBadge = h("span.badge", { "data-testid": "game-status" });
      this.board = h("div.board", { "data-testid": "board" });
      this.resultBox = h("div.result", { "data-testid": "result", hidden: true });
      this.toMove = h("div.status-line", { "data-testid": "to-move" });
      this.lastMove = h("div.last-move", { "data-testid": "last-move" });
      this.ply = h("dd", { "data-testid": "ply" });
      this.turns = h("dd", { "data-testid": "turns" });
      this.deck = h("dd", { "data-testid": "deck-size" });
      this.discard = h("dd");
      this.controls = this.makeControls();
      this.moveList = h("ol");
      this.moves = h("div.moves", { "data-testid": "move-list" }, this.moveList);
      this.root.replaceChildren(
        h("div.game-head", {},
          h("a.back", { href: "#/", text: "← Ladder" }),
          h("h2", {}, botLink(p0), h("span.vs", { text: " vs " }), botLink(p1)),
          this.statusBadge,
          h("code.game-id", { title: "game id", text: game.game_id })),
        h("div.game-grid", {},
          this.board,
          h("aside.panel.side-info", {},
            this.resultBox, this.toMove, this.lastMove,
            h("dl.table-info", {},
              h("dt", { text: "Ply" }), this.ply,
              h("dt", { text: "Turns" }), this.turns,
              h("dt", { text: "Deck" }), this.deck,
              h("dt", { text: "Discard" }), this.discard),
            this.controls, this.moves)),
      );
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
      return h("div", { "data-testid": "replay-controls", hidden: true },
        h("div.controls", {}, this.first, this.prev, this.next, this.last, this.plyOf),
        this.scrub,
        h("div.keys", { text: "← → step · Home / End jump" }));
    }

    setStatus(mode) {
      this.mode = mode;
      this.statusBadge.textContent = mode === "live" ? "live" : this.status || mode;
      this.statusBadge.className = `badge${mode === "live" ? " live" : ""}`;
      this.controls.hidden = mode !== "replay";
    }

    showSide(view, before, move, ply, result) {
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
      renderBoard(this.board, view, before, this.players, ply, over);
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

    // -------- finished: step through /api/games/{id}/replay

    async loadReplay() {
      this.closeWatch();
      const { status, body } = await getJson(`/api/games/${enc(this.id)}/replay`);
      if (!this.alive) return;
      if (status === 409) return this.watch();
      if (status !== 200) {
        this.status = "aborted";
        this.setStatus("over");
        this.toMove.textContent = body && body.error ? body.error.message : `no replay (${status})`;
        return;
      }
      this.replay = body;
      this.status = body.status;
      this.result = body.result;
      this.setStatus("replay");
      const plies = body.plies;
      this.scrub.max = String(plies.length - 1);
      this.moveList.replaceChildren(...plies.slice(1).map((p, i) =>
        h("li", { "data-ply": p.ply, onclick: () => this.goto(p.ply) },
          h("span.n", { text: p.ply }), moveWords(p.move, this.players, plies[i].view))));
      this.index = null;
      this.goto(plies.length - 1);
    }

    goto(i) {
      if (this.mode !== "replay") return;
      const plies = this.replay.plies;
      i = Math.max(0, Math.min(plies.length - 1, i));
      if (i === this.index) return;
      this.index = i;
      const p = plies[i];
      const isLast = i === plies.length - 1;
      this.showSide(p.view, i > 0 ? plies[i - 1].view : null, p.move, p.ply, isLast ? this.result : null);
      this.plyOf.textContent = `${i} / ${plies.length - 1}`;
      this.scrub.value = String(i);
      this.first.disabled = this.prev.disabled = i === 0;
      this.next.disabled = this.last.disabled = isLast;
      for (const li of this.moveList.querySelectorAll("li.current")) li.classList.remove("current");
      const li = this.moveList.children[i - 1];
      if (li) {
        li.classList.add("current");
        const box = this.moves;
        if (li.offsetTop < box.scrollTop || li.offsetTop + li.offsetHeight > box.scrollTop + box.clientHeight) {
          box.scrollTop = li.offsetTop - box.clientHeight / 2;
        }
      }
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

  async function showBot(root, name, view) {
    root.replaceChildren(h("p.empty", { text: "Loading…" }));
    const { status, body } = await getJson(`/api/bots/${enc(name)}`);
    if (!view.alive) return;
    if (status !== 200) {
      root.replaceChildren(h("p.empty", { text: status === 404 ? `There is no bot named ${name}.` : `The bot could not be loaded (${status}).` }),
        h("a.back", { href: "#/", text: "← Ladder" }));
      return;
    }
    const s = body.standing;
    const change = new Map(body.history.map((e) => [e.game_id, e.rating_after - e.rating_before]));
    const facts = s ? [
      ["Rank", `#${s.rank}`], ["95% interval", `${round(s.bt_low)}–${round(s.bt_high)}`],
      ["Games", s.games], ["Opponents met", s.opponents], ["W–D–L", `${s.wins}–${s.draws}–${s.losses}`],
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
          h("div.big-rating", { "data-testid": "bot-rating", text: s ? round(s.rating) : "—" }),
          h("div.empty", { text: s ? (s.provisional ? "Elo · provisional" : "Elo") : "not in the standings" }),
          h("dl.table-info", {}, facts.map(([k, v]) => [h("dt", { text: k }), h("dd", { text: v })]),
            h("dt", { text: "Registered" }), h("dd", {}, timeEl(body.created)))),
        h("section.panel", {},
          h("div.panel-head", {}, h("h2", { text: "Rating" }), h("span.hint", { text: plural(body.history.length, "rated game") })),
          sparkline(body.history),
          h("div.panel-head", { style: "margin-top: 1rem" }, h("h2", { text: "Recent games" })),
          body.games.length
            ? h("div.table-wrap", {}, h("table", { "data-testid": "bot-games" },
              h("thead", {}, h("tr", {}, h("th", { text: "Game" }), h("th", { text: "Result" }), h("th.num", { text: "Score" }),
                h("th.num", { text: "Elo ±" }), h("th", { text: "Kind" }), h("th", { text: "When" }))),
              h("tbody", {}, rows)))
            : h("p.empty", { text: "No game yet." }))),
    );
  }

  // ---------------------------------------------------------------- routes

  let current = null;

  function route() {
    if (current) current.destroy();
    current = null;
    const hash = location.hash || "#/";
    for (const section of document.querySelectorAll("main > .route")) section.hidden = true;
    let m;
    if ((m = hash.match(/^#\/game\/([^/?#]+)/))) {
      const id = decodeURIComponent(m[1]);
      document.title = `Game ${id} · Mandala Arena`;
      $("#game").hidden = false;
      current = new GameView($("#game"), id);
    } else if ((m = hash.match(/^#\/bot\/([^/?#]+)/))) {
      const name = decodeURIComponent(m[1]);
      document.title = `${name} · Mandala Arena`;
      $("#bot").hidden = false;
      const view = { alive: true, destroy() { this.alive = false; } };
      current = view;
      showBot($("#bot"), name, view);
    } else if (hash === "#/connect") {
      document.title = "Connect a bot · Mandala Arena";
      $("#connect").hidden = false;
    } else {
      document.title = "Mandala Arena";
      $("#home").hidden = false;
    }
    window.scrollTo(0, 0);
  }

  function start() {
    const base = `${location.protocol}//${location.host}`;
    for (const el of document.querySelectorAll(".base-url")) el.textContent = base;
    for (const el of document.querySelectorAll(".ws-url")) el.textContent = wsUrl("/ws");
    window.addEventListener("hashchange", route);
    route();
    connectLive();
    setInterval(refreshTimes, 30000);
  }

  start();
})();

#!/usr/bin/env node
// A Mandala Arena bot in one file, on Node's built-in WebSocket client: nothing to install.
//
//   MANDALA_TOKEN=mdl_... node mandala-bot.mjs --url wss://HOST/ws [--ladder | --challenge NAME]
//                        [--games N] [--max-games K] [--ca-file FILE]
//
// Node >= 22 has `WebSocket` built in; on Node 20.10+ run `node --experimental-websocket`.
// It speaks protocol version 1 (protocol/PROTOCOL.md): says hello, accepts the challenges it has room
// for, answers every decision with one of its legal moves, plays several games at once, and
// reconnects after a dropped (or silently dead) connection. One line per game start and end goes to stderr.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { parseArgs } from 'node:util';

const USAGE = `usage: node mandala-bot.mjs --url ws[s]://HOST:PORT/ws [--ladder | --challenge NAME]
                          [--games N] [--max-games K] [--ca-file FILE] [--token-file FILE | --token TOKEN]
  --url URL         the server's WebSocket endpoint (default ws://127.0.0.1:8080/ws)
  MANDALA_TOKEN     (environment) the bot's token; or --token-file FILE, or --token TOKEN (seen in ps)
  --challenge NAME  challenge that bot, again after each game
  --ladder          join the ladder (seek) and play the games it starts
  --games N         stop after N games (default: play until interrupted)
  --max-games K     games played at once (hello's max_games, default 1)
  --ca-file FILE    for wss://: the private CA that signed the server's certificate (or MANDALA_CA_FILE)`;
const NO_RECONNECT = { 4001: 'bad token', 4002: 'unsupported version', 4009: 'replaced', 4011: 'token retired', 4012: 'TLS required' };
const PAIR_WAIT_MS = 15000; // with --games on the ladder: how long to wait for a pair's return game
const HEARTBEAT_MS = 30000; // as the Python client (aiohttp's heartbeat): nothing received this long: send a ping
const DEAD_MS = 45000; // nothing received this long: the server or the network is gone, drop the connection
const CLOSE_WAIT_MS = 2000; // on stop: how long to wait for the server to answer the close
// Protocol version 1's error codes (§14); any other is a newer server's plain refusal (§16).
const KNOWN_ERRORS = new Set(('bad_json not_object unknown_type invalid_message binary_frame frame_too_large'
  + ' unsupported_version not_authenticated already_authenticated bad_token tls_required spectator unknown_game'
  + ' not_your_game not_your_turn stale_request illegal_move game_over unknown_bot bot_offline challenge_self'
  + ' unknown_challenge rate_limited removed storage_unavailable cluster_unavailable flood internal_error').split(' '));
const log = (text) => process.stderr.write(`${new Date().toISOString()} ${text}\n`);

// ------------------------------------------------------------------ choosing a move

/** Claims: a color already in our river (the later its slot, the more each card scores), else
 *  a new one; turns: the biggest field play, else a mountain card, else the smallest discard.
 *  Every candidate comes from `legal`, so the move is always legal; ties are broken at random. */
function chooseMove(view, legal) {
  const river = view.players[view.seat].river;
  const theirs = view.players[1 - view.seat].river;
  const score = (m) => ({
    claim: () => (river.includes(m.color) ? 10 * (river.indexOf(m.color) + 1) : theirs.includes(m.color) ? 0 : 5),
    field: () => 20 + m.count, mountain: () => 10, discard: () => 5 - m.count,
  }[m.type]?.() ?? 0);
  const best = Math.max(...legal.map(score));
  const top = legal.filter((m) => score(m) === best);
  return top[Math.floor(Math.random() * top.length)];
}

// ------------------------------------------------------------------ the bot

class Bot {
  constructor(opts) {
    Object.assign(this, opts, { started: 0, finished: 0, failures: 0, removed: false });
    this.games = new Map(); // game_id -> {seat, opponent, pairId, moves, refused}
    this.openPairs = new Set(); // with --games: duplicate pairs whose return game has not started yet
    this.timers = new Set(); // the connection's (retries, heartbeat, pair wait), then the reconnect's: its end and stop() cancel them
    this.done = new Promise((resolve) => { this.resolve = resolve; });
  }

  later(fn, ms) {
    const timer = setTimeout(() => { this.timers.delete(timer); fn(); }, ms);
    this.timers.add(timer);
  }

  cancelTimers() { for (const timer of this.timers) clearTimeout(timer); this.timers.clear(); }

  connect() {
    this.rereadToken();
    log(`connecting to ${this.url}`);
    Object.assign(this, { welcomed: false, challengeOut: false, seekOut: false, unseekSent: false, waiting: false, accepting: 0 });
    const ws = (this.ws = new WebSocket(this.url));
    ws.onopen = () => this.send({ type: 'hello', protocol: 1, token: this.token, max_games: this.maxGames, client: 'mandala-bot.mjs/2.0' });
    ws.onmessage = (e) => {
      this.heard = Date.now();
      try { this.handle(JSON.parse(e.data)); } catch (err) { log(`failed on a frame: ${err.stack || err}`); }
    };
    let ended = false; // Node 20 fires no close after a failed connection: its error ends it then
    const end = (code, reason) => {
      if (ended) return;
      ended = true;
      ws.onmessage = null; // the frames of a dropped connection are no longer this bot's
      this.closed(code, reason);
    };
    ws.onclose = (event) => end(event.code, event.reason);
    ws.onerror = () => setTimeout(() => end(1006, ''), 50);
    this.heard = Date.now();
    this.heartbeat((why) => { end(1006, why); ws.close(); });
  }

  /** A WHATWG WebSocket sends no ping frames: after HEARTBEAT_MS without a frame it sends the protocol's
   *  `ping` (§5.10), whose `pong` shows the server is there; after DEAD_MS without one it drops the connection. */
  heartbeat(drop) {
    const quiet = Date.now() - this.heard;
    if (quiet >= DEAD_MS) return drop(`nothing received for ${DEAD_MS / 1000} s`);
    if (quiet >= HEARTBEAT_MS) this.send({ type: 'ping' });
    return this.later(() => this.heartbeat(drop), (quiet < HEARTBEAT_MS ? HEARTBEAT_MS : DEAD_MS) - quiet);
  }

  send(msg) { if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg)); }

  /** Exits with `code` whatever the connection's state: no timer fires again (nor a reconnect); an open
   *  connection is closed first, waiting at most CLOSE_WAIT_MS for the server's answer. */
  stop(code) {
    this.exitCode = code;
    this.cancelTimers();
    if (this.ws.readyState !== WebSocket.OPEN) return this.resolve(code);
    this.ws.close(1000, 'done');
    return setTimeout(() => this.resolve(code), CLOSE_WAIT_MS);
  }

  async closed(code, reason) {
    this.cancelTimers();
    if (this.exitCode !== undefined) return this.resolve(this.exitCode);
    if (code === 4011 && this.tokenFile && await this.rotated()) return this.connect();
    if (!this.welcomed && this.url.startsWith('wss:') && await tlsFailure(this.url)) return this.resolve(1);
    if (!this.welcomed && code === 1006 && await noWebSocket(this.url)) return this.resolve(1);
    if (NO_RECONNECT[code]) {
      log(`connection closed (${code} ${reason || NO_RECONNECT[code]}); not reconnecting`);
      return this.resolve(1);
    }
    if (!this.welcomed && ++this.failures >= 8) {
      log(`connection closed (${code}); giving up after ${this.failures} failed attempts`);
      return this.resolve(1);
    }
    const delay = Math.round(Math.min(30000, 500 * 2 ** this.failures) * (0.75 + Math.random() * 0.5));
    log(`connection closed (${code}${reason ? ` ${reason}` : ''}); reconnecting in ${delay} ms`);
    return this.later(() => this.connect(), delay);
  }

  /** A token file is read at each connection (a rotation may have written a new one); unreadable, the token read before serves. */
  rereadToken() {
    if (!this.tokenFile) return;
    try { this.token = readToken(this.tokenFile); } catch (err) { log(`${err.message}; trying the token read before`); }
  }

  /** After 4011: wait up to 10 s for the token file to hold a new token (mandala bot rotate writes it there). */
  async rotated() {
    for (let i = 0; i < 100; i++, await new Promise((r) => { setTimeout(r, 100); })) {
      try {
        if (readToken(this.tokenFile) !== this.token) { log('token retired: reconnecting with the new one'); return true; }
      } catch { /* being written */ }
    }
    return false;
  }

  /** Whether to begin another game, `pending` more (accepted, not started) being on their way already. */
  wantMore(pending = 0) { return this.gamesWanted === undefined || this.started + pending < this.gamesWanted; }
  progress() { return this.gamesWanted === undefined ? '' : ` [${this.finished}/${this.gamesWanted}]`; }

  /** With --games N: once N games are over, stop; but first wait for the return game of a
   *  duplicate pair whose first game was played. Returns whether it is done seeking. */
  stopIfDone() {
    if (this.gamesWanted === undefined || this.finished < this.gamesWanted || this.games.size > 0) return false;
    if (this.openPairs.size === 0) this.stop(0);
    else if (!this.waiting) {
      this.waiting = true;
      log(`waiting up to ${PAIR_WAIT_MS / 1000} s for the return game of pair ${[...this.openPairs].join(', ')}`);
      this.later(() => { this.openPairs.clear(); this.stopIfDone(); }, PAIR_WAIT_MS);
    }
    return true;
  }

  challengeAgain() {
    if (!this.opponent || this.challengeOut || !this.wantMore() || this.games.size >= this.maxGames) return undefined;
    this.challengeOut = true;
    return this.send({ type: 'challenge', opponent: this.opponent });
  }

  retryChallenge(ms) {
    if (this.challengeOut) this.later(() => { this.challengeOut = false; this.challengeAgain(); }, ms);
  }

  seek() {
    this.seekOut = true; // until a `ladder` answers it
    this.send({ type: 'seek' });
  }

  retrySeek(ms) {
    if (this.seekOut) this.later(() => { if (this.seekOut && this.wantMore() && !this.removed) this.seek(); }, ms);
  }

  handle(msg) {
    switch (msg.type) {
      case 'welcome': {
        Object.assign(this, { welcomed: true, failures: 0 });
        log(`connected as ${msg.bot} (decisions: ${msg.limits.decision_ms} ms)`);
        for (const id of [...this.games.keys()].filter((g) => !msg.games.includes(g))) {
          this.games.delete(id); // it ended while we were away: no game_over comes (§13)
          this.finished += 1;
          log(`game ${id} ended while disconnected${this.progress()}`);
        }
        if (this.stopIfDone()) return;
        if (this.ladder && this.wantMore()) this.seek();
        this.challengeAgain();
        return;
      }
      case 'challenged': return this.challenged(msg);
      case 'challenge_declined':
        log(`challenge to ${this.opponent} declined (${msg.reason}); trying again in 1000 ms`);
        return this.retryChallenge(1000);
      case 'game_start': return this.gameStart(msg);
      case 'decision':
        return this.send({ type: 'move', game_id: msg.game_id, request_id: msg.request_id, move: chooseMove(msg.view, msg.legal) });
      case 'move_accepted':
        if (this.games.has(msg.game_id)) this.games.get(msg.game_id).moves += 1;
        return undefined;
      case 'game_over': return this.gameOver(msg);
      case 'error': return this.error(msg);
      case 'ladder': return this.ladderNews(msg);
      default: return undefined; // update, pong, opponent_away/back, and anything newer
    }
  }

  gameStart(msg) {
    if (msg.resumed && this.games.has(msg.game_id)) return log(`game ${msg.game_id} resumed`);
    const opponent = msg.players.find((p) => p.seat !== msg.seat)?.name ?? '?';
    const pairId = msg.pair_id ?? null;
    if (!msg.resumed) {
      this.started += 1;
      // a pair's first game opens it, its return game closes it; only --games waits for one
      if (pairId !== null && this.gamesWanted !== undefined && !this.openPairs.delete(pairId)) this.openPairs.add(pairId);
    }
    if (msg.kind === 'challenge' && this.accepting) this.accepting -= 1;
    this.games.set(msg.game_id, { seat: msg.seat, opponent, pairId, moves: 0, refused: 0 });
    this.challengeOut = false;
    log(`game ${msg.game_id} ${msg.resumed ? 'resumed' : 'started'}: seat ${msg.seat} against ${opponent} (${msg.kind}, ${msg.rated ? 'rated' : 'unrated'})`);
    if (this.ladder && !this.wantMore() && !this.unseekSent) { this.unseekSent = true; this.send({ type: 'unseek' }); }
    return this.challengeAgain();
  }

  gameOver(msg) {
    const game = this.games.get(msg.game_id) ?? { seat: 0, opponent: '?', moves: 0, refused: 0 };
    this.games.delete(msg.game_id);
    this.finished += 1;
    const r = msg.result;
    const outcome = r.end_reason === 'aborted' ? 'aborted' : r.winner === null ? 'draw' : r.winner === game.seat ? 'won' : 'lost';
    const [mine, theirs] = game.seat === 1 ? [r.scores[1], r.scores[0]] : r.scores;
    log(`game ${msg.game_id} over: ${outcome} ${mine}-${theirs} (${r.end_reason}) against ${game.opponent}, ${game.moves} moves, ${game.refused} refused${this.progress()}`);
    if (r.end_reason === 'aborted' && game.pairId) this.openPairs.delete(game.pairId);
    if (!this.stopIfDone()) this.challengeAgain();
  }

  /** The server starts every accepted game, whatever this bot plays already (§5.4): the room is
   *  counted here, running games and accepts whose game has not started yet. */
  challenged(msg) {
    if (this.games.size + this.accepting >= this.maxGames || !this.wantMore(this.accepting)) {
      log(`declining the challenge of ${msg.challenger}: no room for another game`);
      return this.send({ type: 'decline', challenge_id: msg.challenge_id });
    }
    this.accepting += 1;
    log(`accepting the challenge of ${msg.challenger}`);
    return this.send({ type: 'accept', challenge_id: msg.challenge_id });
  }

  error(msg) {
    if (msg.code === 'removed') return this.removedNow(msg.message);
    log(`error ${msg.code}${msg.rule ? ` [${msg.rule}]` : ''}: ${msg.message}${msg.game_id ? ` (game ${msg.game_id})` : ''}`);
    if (this.games.has(msg.game_id)) this.games.get(msg.game_id).refused += 1;
    if (msg.code === 'unknown_bot' || msg.code === 'challenge_self') {
      log(`cannot challenge ${this.opponent}; stopping`);
      return this.stop(1);
    }
    if (['bot_offline', 'unknown_challenge', 'storage_unavailable', 'cluster_unavailable'].includes(msg.code)
      && this.accepting && !msg.game_id) this.accepting -= 1; // an accept that starts no game
    return this.retry(msg);
  }

  /** "Try again later" (§5.3, §5.11, §20.1), and a code this bot does not know (§16): the refused
   *  seek or challenge is sent again after `retry_after` seconds, or 1 s. */
  retry(msg) {
    const ms = 1000 * (msg.retry_after || 1);
    const unknown = !KNOWN_ERRORS.has(msg.code);
    const seeks = msg.code === 'rate_limited' && msg.limit === 'seeks';
    if (unknown || seeks || msg.code === 'cluster_unavailable') this.retrySeek(ms);
    if (unknown || (msg.code === 'rate_limited' && !seeks)
      || ['bot_offline', 'storage_unavailable', 'cluster_unavailable'].includes(msg.code)) this.retryChallenge(ms);
  }

  ladderNews(msg) {
    this.seekOut = false;
    log(`ladder: ${msg.message}`);
    if (msg.state === 'removed') return this.removedNow(msg.message);
    if (this.removed && (msg.state === 'qualifying' || msg.state === 'listed')) {
      this.removed = false;
      if (this.ladder && this.wantMore() && !msg.seeking) {
        log('restored to the ladder by the organizer: seeking again');
        this.seek();
      }
    }
    if (msg.state === 'failed' && this.wantMore()) this.seek();
    return undefined;
  }

  /** The organizer took it off the ladder: it plays on (games, challenges) but seeks no more. */
  removedNow(why) {
    if (!this.removed) log(`${why.startsWith('removed from the ladder') ? why : `removed from the ladder by the organizer: ${why}`}; playing on (running games, challenges), no more seeking`);
    this.removed = true;
  }
}

// ------------------------------------------------------------------ TLS and the token

function readToken(file) {
  const token = readFileSync(file, 'utf8').trim();
  if (!token || /\s/.test(token)) throw new Error(`--token-file ${file}: not a token (one line, the token)`);
  return token;
}

/** Whether TLS is why a wss:// connection failed: then say why, with the URL (retrying would not help). */
function tlsFailure(url) {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port: Number(port || 443), servername: /^[\d.:]+$/.test(host) ? undefined : host });
    socket.once('secureConnect', () => resolve(socket.destroy() && false));
    socket.once('error', (err) => {
      if (!/CERT|SIGNATURE|ISSUER|SSL|TLS/.test(err.code ?? '')) return resolve(false);
      log(`cannot connect to ${url}: TLS: ${err.message} (${err.code}); if the server's certificate comes from a private`
        + ' certificate authority, give its CA file with --ca-file or MANDALA_CA_FILE; a server without TLS is ws://');
      return resolve(true);
    });
  });
}

/** Whether the URL answers a WebSocket upgrade with a page (ws://HOST:PORT without the arena's /ws: 200, 404):
 * then say so, naming the path (retrying would meet the same page; a 429 or 5xx from a proxy is retried). */
function noWebSocket(url) {
  const target = url.replace(/^ws/, 'http'), key = randomBytes(16).toString('base64');
  const headers = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key };
  return new Promise((resolve) => {
    const req = (target.startsWith('https:') ? httpsRequest : httpRequest)(target, { headers });
    req.once('error', () => resolve(false)).once('upgrade', (res, socket) => resolve(socket.destroy() && false));
    req.once('response', (res) => {
      res.resume();
      if (res.statusCode === 429 || res.statusCode >= 500) return resolve(false);
      const hint = new URL(url).pathname.endsWith('/ws') ? '' : `; the arena's WebSocket is at /ws: ${url.replace(/\/?$/, '/ws')}`;
      log(`no WebSocket at ${url} (the server answered HTTP ${res.statusCode}); not reconnecting${hint}`);
      return resolve(true);
    }).end();
  });
}

// ------------------------------------------------------------------ command line

/** What `new WebSocket` would refuse (with a stack trace, once connecting): refused here, with the usage. */
function wsUrl(text) {
  let url = null;
  try { url = new URL(text); } catch { /* not a URL: refused below */ }
  if (!['ws:', 'wss:'].includes(url?.protocol) || url.href.includes('#')) {
    throw new Error(`--url must be a ws:// or wss:// URL such as ws://127.0.0.1:8080/ws (no #), not ${text}`);
  }
  return text;
}

const VALUED = ['--url', '--token', '--token-file', '--ca-file', '--challenge', '--games', '--max-games'];

function options(argv, env) {
  const args = []; // a token may begin with "-": join each option that takes a value with the next word
  for (let i = 0; i < argv.length; i++) args.push(VALUED.includes(argv[i]) && i + 1 < argv.length ? `${argv[i]}=${argv[++i]}` : argv[i]);
  const { values } = parseArgs({
    args,
    options: { url: { type: 'string', default: 'ws://127.0.0.1:8080/ws' }, token: { type: 'string' },
      'token-file': { type: 'string' }, 'ca-file': { type: 'string', default: env.MANDALA_CA_FILE || undefined },
      challenge: { type: 'string' }, ladder: { type: 'boolean' }, games: { type: 'string' },
      'max-games': { type: 'string', default: '1' } },
  });
  const positive = (text, name) => { if (/^[1-9]\d*$/.test(text)) return Number(text); throw new Error(`${name} must be a positive integer, not ${text}`); };
  const tokenFile = values['token-file'];
  if (tokenFile && values.token) throw new Error('--token and --token-file exclude each other');
  const token = values.token ?? (tokenFile ? readToken(tokenFile) : env.MANDALA_TOKEN);
  if (!token) throw new Error('no token: set MANDALA_TOKEN, or pass --token-file FILE or --token TOKEN');
  if (values.ladder && values.challenge) throw new Error('--ladder and --challenge exclude each other');
  if (values['ca-file']) readFileSync(values['ca-file']); // unreadable: say so now
  return { url: wsUrl(values.url), token, tokenFile, caFile: values['ca-file'], opponent: values.challenge, ladder: Boolean(values.ladder),
    gamesWanted: values.games === undefined ? undefined : positive(values.games, '--games'),
    maxGames: Math.min(64, positive(values['max-games'], '--max-games')) };
}

let opts;
try {
  opts = options(process.argv.slice(2), process.env);
} catch (err) {
  process.stderr.write(`${err.message}\n${USAGE}\n`);
  process.exit(2);
}
if (opts.caFile && process.env.NODE_EXTRA_CA_CERTS !== opts.caFile) {
  // Node reads extra CA certificates only at start: run again with them, passing signals on.
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)],
    { stdio: 'inherit', env: { ...process.env, NODE_EXTRA_CA_CERTS: opts.caFile } });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
} else if (typeof WebSocket === 'undefined') {
  log(`Node ${process.versions.node} has no built-in WebSocket: use Node >= 22, or run node --experimental-websocket (Node 20.10+)`);
  process.exit(1);
} else {
  const bot = new Bot(opts);
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => { log('interrupted; closing'); bot.stop(130); });
  bot.connect();
  const code = await bot.done;
  log(`done: ${bot.finished} game${bot.finished === 1 ? '' : 's'} played`);
  process.exit(code);
}

#!/usr/bin/env node
// A Mandala Arena bot in one file, on Node's built-in WebSocket client: nothing to install.
//
//   MANDALA_TOKEN=mdl_... node mandala-bot.mjs --url wss://HOST/ws [--ladder | --challenge NAME]
//                        [--games N] [--max-games K] [--ca-file FILE]
//
// Node >= 22 has `WebSocket` built in; on Node 20.10+ run `node --experimental-websocket`.
// It speaks protocol version 1 (protocol/PROTOCOL.md): says hello, accepts every challenge,
// answers every decision with one of its legal moves, plays several games at once, and
// reconnects after a dropped connection. One line per game start and end goes to stderr.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
    this.openPairs = new Set(); // duplicate pairs whose return game has not started yet
    this.done = new Promise((resolve) => { this.resolve = resolve; });
  }

  connect() {
    if (this.tokenFile) this.token = readToken(this.tokenFile); // a rotation may have written a new one
    log(`connecting to ${this.url}`);
    Object.assign(this, { welcomed: false, challengeOut: false, unseekSent: false, waiting: false });
    const ws = (this.ws = new WebSocket(this.url));
    ws.onopen = () => this.send({ type: 'hello', protocol: 1, token: this.token, max_games: this.maxGames, client: 'mandala-bot.mjs/2.0' });
    ws.onmessage = (e) => { try { this.handle(JSON.parse(e.data)); } catch (err) { log(`failed on a frame: ${err.stack || err}`); } };
    let ended = false; // Node 20 fires no close after a failed connection: its error ends it then
    const end = (code, reason) => { if (!ended && (ended = true)) this.closed(code, reason); };
    ws.onclose = (event) => end(event.code, event.reason);
    ws.onerror = () => setTimeout(() => end(1006, ''), 50);
  }

  send(msg) { if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg)); }

  stop(code) {
    this.exitCode = code;
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000, 'done');
    else this.resolve(code);
  }

  async closed(code, reason) {
    if (this.exitCode !== undefined) return this.resolve(this.exitCode);
    if (code === 4011 && this.tokenFile && await this.rotated()) return this.connect();
    if (!this.welcomed && this.url.startsWith('wss:') && await tlsFailure(this.url)) return this.resolve(1);
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
    return setTimeout(() => this.connect(), delay);
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

  wantMore() { return this.gamesWanted === undefined || this.started < this.gamesWanted; }
  progress() { return this.gamesWanted === undefined ? '' : ` [${this.finished}/${this.gamesWanted}]`; }

  /** With --games N: once N games are over, stop; but first wait for the return game of a
   *  duplicate pair whose first game was played. Returns whether it is done seeking. */
  stopIfDone() {
    if (this.gamesWanted === undefined || this.finished < this.gamesWanted || this.games.size > 0) return false;
    if (this.openPairs.size === 0) this.stop(0);
    else if (!this.waiting) {
      this.waiting = true;
      log(`waiting up to ${PAIR_WAIT_MS / 1000} s for the return game of pair ${[...this.openPairs].join(', ')}`);
      setTimeout(() => { this.openPairs.clear(); this.stopIfDone(); }, PAIR_WAIT_MS);
    }
    return true;
  }

  challengeAgain(afterMs = 0) {
    if (afterMs) return setTimeout(() => { this.challengeOut = false; this.challengeAgain(); }, afterMs);
    if (!this.opponent || this.challengeOut || !this.wantMore() || this.games.size >= this.maxGames) return undefined;
    this.challengeOut = true;
    return this.send({ type: 'challenge', opponent: this.opponent });
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
        if (this.ladder && this.wantMore()) this.send({ type: 'seek' });
        this.challengeAgain();
        return;
      }
      case 'challenged':
        if (!this.wantMore()) return this.send({ type: 'decline', challenge_id: msg.challenge_id });
        log(`accepting the challenge of ${msg.challenger}`);
        return this.send({ type: 'accept', challenge_id: msg.challenge_id });
      case 'challenge_declined':
        log(`challenge to ${this.opponent} declined (${msg.reason}); trying again in 1000 ms`);
        return this.challengeAgain(1000);
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
      if (pairId !== null && !this.openPairs.delete(pairId)) this.openPairs.add(pairId);
    }
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

  error(msg) {
    if (msg.code === 'removed') return this.removedNow(msg.message);
    log(`error ${msg.code}${msg.rule ? ` [${msg.rule}]` : ''}: ${msg.message}${msg.game_id ? ` (game ${msg.game_id})` : ''}`);
    if (this.games.has(msg.game_id)) this.games.get(msg.game_id).refused += 1;
    if (msg.code === 'unknown_bot' || msg.code === 'challenge_self') {
      log(`cannot challenge ${this.opponent}; stopping`);
      return this.stop(1);
    }
    const retry = this.challengeOut && ['bot_offline', 'rate_limited', 'storage_unavailable'].includes(msg.code);
    return retry ? this.challengeAgain(1000 * (msg.retry_after || 1)) : undefined;
  }

  ladderNews(msg) {
    log(`ladder: ${msg.message}`);
    if (msg.state === 'removed') return this.removedNow(msg.message);
    if (this.removed && (msg.state === 'qualifying' || msg.state === 'listed')) {
      this.removed = false;
      if (this.ladder && this.wantMore() && !msg.seeking) {
        log('restored to the ladder by the organizer: seeking again');
        this.send({ type: 'seek' });
      }
    }
    if (msg.state === 'failed' && this.wantMore()) this.send({ type: 'seek' });
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

// ------------------------------------------------------------------ command line

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
  return { url: values.url, token, tokenFile, caFile: values['ca-file'], opponent: values.challenge, ladder: Boolean(values.ladder),
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

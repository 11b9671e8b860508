#!/usr/bin/env node
// A Mandala Arena bot in one file for Node.js >= 20, with no dependencies beyond Node itself.
//
//   node mandala-bot.mjs --url ws://127.0.0.1:8080/ws --token TOKEN [--ladder | --challenge NAME]
//                        [--games N] [--max-games K]
//
// It speaks protocol version 1 (protocol/PROTOCOL.md): says hello, accepts every challenge,
// answers every decision with a legal move picked by a small heuristic, and reconnects after
// a dropped connection. One line per game start and end goes to stderr. Removed from the
// ladder by the organizer, it plays on (running games, challenges) without seeking, and seeks
// again when a `ladder` message says it was restored.
//
// Node 20 has no WebSocket client without a flag, so this file carries a small RFC 6455 client
// (WebSocketClient, exported for tests) built on node:http / node:https upgrades.

import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { realpathSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const PROTOCOL = 1;
const CLIENT_NAME = 'mandala-bot.mjs/1.0 (node)';
const COLORS = ['red', 'orange', 'yellow', 'green', 'purple', 'black'];

// ------------------------------------------------------------------ WebSocket client (RFC 6455)

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/**
 * A WebSocket client connection. Events:
 *   'open'                       the handshake succeeded
 *   'message' (data, isBinary)   a whole message: a string for text, a Buffer for binary
 *   'error'   (err)              something failed (the connection then closes)
 *   'close'   (code, reason)     the end, always emitted exactly once; 1006 if no close frame came
 */
export class WebSocketClient extends EventEmitter {
  constructor(url, { maxMessageBytes = 16 * 1024 * 1024, handshakeTimeoutMs = 10000, closeTimeoutMs = 3000 } = {}) {
    super();
    this.url = new URL(url);
    if (this.url.protocol !== 'ws:' && this.url.protocol !== 'wss:') {
      throw new Error(`not a ws:// or wss:// URL: ${url}`);
    }
    this.maxMessageBytes = maxMessageBytes;
    this.closeTimeoutMs = closeTimeoutMs;
    this.readyState = 'connecting';
    this.socket = null;
    this._buf = Buffer.alloc(0);
    this._fragments = null; // the frames of a message still being received
    this._fragmentsOpcode = 0;
    this._fragmentsBytes = 0;
    this._closeSent = false;
    this._closeCode = null;
    this._closeReason = '';
    this._closeTimer = null;
    this._failed = false;
    this._decoder = new TextDecoder('utf-8', { fatal: true });
    this._handshake(handshakeTimeoutMs);
  }

  _handshake(timeoutMs) {
    const secure = this.url.protocol === 'wss:';
    const key = randomBytes(16).toString('base64');
    const req = (secure ? https : http).request({
      hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
      port: this.url.port || (secure ? 443 : 80),
      path: this.url.pathname + this.url.search,
      method: 'GET',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Version': '13',
      },
    });
    this._req = req;
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no WebSocket handshake within ${timeoutMs} ms`)));
    req.on('error', (err) => this._abort(err));
    req.on('response', (res) => {
      res.resume();
      this._abort(new Error(`HTTP ${res.statusCode} instead of a WebSocket upgrade`));
    });
    req.on('upgrade', (res, socket, head) => {
      req.setTimeout(0);
      const expected = createHash('sha1').update(key + WS_GUID).digest('base64');
      if (res.headers['sec-websocket-accept'] !== expected) {
        socket.destroy();
        this._abort(new Error('bad Sec-WebSocket-Accept in the handshake answer'));
      } else if (res.headers['sec-websocket-extensions']) {
        socket.destroy();
        this._abort(new Error('the server chose an extension this client did not offer'));
      } else {
        this._attach(socket, head);
      }
    });
    req.end();
  }

  /** Failure before the connection opened. */
  _abort(err) {
    if (this.readyState !== 'connecting') return;
    this.readyState = 'closed';
    this._emitError(err);
    this.emit('close', 1006, '');
  }

  _attach(socket, head) {
    this.socket = socket;
    this.readyState = 'open';
    socket.setNoDelay(true);
    socket.setTimeout(0);
    socket.on('data', (chunk) => this._onData(chunk));
    socket.on('error', (err) => this._emitError(err));
    socket.on('close', () => this._onSocketClosed());
    this.emit('open');
    if (head.length > 0) this._onData(head);
  }

  _emitError(err) {
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  /** Send one text message (a string). Returns false if the connection is not open. */
  send(text) {
    if (this.readyState !== 'open') return false;
    this._sendFrame(OP_TEXT, Buffer.from(text, 'utf8'));
    return true;
  }

  /** Start the closing handshake; 'close' follows when the server answers or after a timeout. */
  close(code = 1000, reason = '') {
    if (this.readyState === 'connecting') {
      this._req.destroy();
      this._abort(new Error('closed before the handshake finished'));
      return;
    }
    if (this.readyState !== 'open') return;
    this.readyState = 'closing';
    const text = Buffer.from(reason, 'utf8').subarray(0, 123);
    const payload = Buffer.alloc(2 + text.length);
    payload.writeUInt16BE(code, 0);
    text.copy(payload, 2);
    this._sendFrame(OP_CLOSE, payload);
    this._closeSent = true;
    this._closeTimer = setTimeout(() => this.socket.destroy(), this.closeTimeoutMs);
  }

  /** One frame, always masked as a client must (RFC 6455 §5.3), with a 7-, 16- or 64-bit length. */
  _sendFrame(opcode, payload) {
    const n = payload.length;
    const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
    const start = 2 + lengthBytes + 4;
    const frame = Buffer.allocUnsafe(start + n);
    frame[0] = 0x80 | opcode; // FIN: this client never fragments what it sends
    if (lengthBytes === 0) {
      frame[1] = 0x80 | n;
    } else if (lengthBytes === 2) {
      frame[1] = 0x80 | 126;
      frame.writeUInt16BE(n, 2);
    } else {
      frame[1] = 0x80 | 127;
      frame.writeBigUInt64BE(BigInt(n), 2);
    }
    const mask = randomBytes(4);
    mask.copy(frame, start - 4);
    for (let i = 0; i < n; i++) frame[start + i] = payload[i] ^ mask[i & 3];
    this.socket.write(frame);
  }

  _onData(chunk) {
    if (this._failed || this._closeCode !== null) return; // nothing is read after a close frame
    this._buf = this._buf.length === 0 ? chunk : Buffer.concat([this._buf, chunk]);
    while (!this._failed && this._closeCode === null) {
      const b = this._buf;
      if (b.length < 2) return;
      const fin = (b[0] & 0x80) !== 0;
      const opcode = b[0] & 0x0f;
      if ((b[0] & 0x70) !== 0) return this._fail(1002, 'reserved bits set (no extension was agreed)');
      if ((b[1] & 0x80) !== 0) return this._fail(1002, 'the server masked a frame');
      let length = b[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (b.length < 4) return;
        length = b.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (b.length < 10) return;
        const big = b.readBigUInt64BE(2);
        if (big > BigInt(this.maxMessageBytes)) return this._fail(1009, 'frame too big');
        length = Number(big);
        offset = 10;
      }
      if (b.length < offset + length) return;
      const payload = b.subarray(offset, offset + length);
      this._buf = b.subarray(offset + length);
      this._onFrame(fin, opcode, payload);
    }
  }

  _onFrame(fin, opcode, payload) {
    if (opcode >= 0x8) {
      if (!fin || payload.length > 125) return this._fail(1002, 'fragmented or oversized control frame');
      if (opcode === OP_CLOSE) return this._onCloseFrame(payload);
      if (opcode === OP_PING) {
        if (this.readyState === 'open') this._sendFrame(OP_PONG, payload);
        return undefined;
      }
      if (opcode === OP_PONG) return undefined;
      return this._fail(1002, `unknown control opcode ${opcode}`);
    }
    if (opcode === OP_CONTINUATION) {
      if (this._fragments === null) return this._fail(1002, 'continuation frame without a message');
    } else if (opcode === OP_TEXT || opcode === OP_BINARY) {
      if (this._fragments !== null) return this._fail(1002, 'new message inside a fragmented one');
      this._fragments = [];
      this._fragmentsOpcode = opcode;
      this._fragmentsBytes = 0;
    } else {
      return this._fail(1002, `unknown opcode ${opcode}`);
    }
    this._fragments.push(payload);
    this._fragmentsBytes += payload.length;
    if (this._fragmentsBytes > this.maxMessageBytes) return this._fail(1009, 'message too big');
    if (!fin) return undefined;
    const data = this._fragments.length === 1 ? this._fragments[0] : Buffer.concat(this._fragments);
    const isBinary = this._fragmentsOpcode === OP_BINARY;
    this._fragments = null;
    if (isBinary) {
      this.emit('message', Buffer.from(data), true);
      return undefined;
    }
    let text;
    try {
      text = this._decoder.decode(data);
    } catch {
      return this._fail(1007, 'text message is not valid UTF-8');
    }
    this.emit('message', text, false);
    return undefined;
  }

  _onCloseFrame(payload) {
    if (payload.length === 1) return this._fail(1002, 'close frame with a 1-byte payload');
    this._closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
    this._closeReason = payload.length > 2 ? payload.subarray(2).toString('utf8') : '';
    if (!this._closeSent) {
      // Echo the code (RFC 6455 §5.5.1) and let the server close the TCP connection first.
      this._sendFrame(OP_CLOSE, payload.subarray(0, 2));
      this._closeSent = true;
    }
    this.readyState = 'closing';
    this.socket.end();
    clearTimeout(this._closeTimer);
    this._closeTimer = setTimeout(() => this.socket.destroy(), this.closeTimeoutMs);
    return undefined;
  }

  /** A protocol violation by the server: report it, send a close frame and read no further. */
  _fail(code, reason) {
    this._failed = true;
    this._buf = Buffer.alloc(0);
    this._emitError(new Error(`WebSocket protocol error: ${reason}`));
    if (this.readyState === 'open') this.close(code, reason);
    this._closeCode = code;
    this._closeReason = reason;
    this.socket.end();
    return undefined;
  }

  _onSocketClosed() {
    if (this.readyState === 'closed') return;
    this.readyState = 'closed';
    clearTimeout(this._closeTimer);
    this.emit('close', this._closeCode ?? 1006, this._closeReason);
  }
}

// ------------------------------------------------------------------ the heuristic

function total(cards) {
  return COLORS.reduce((sum, c) => sum + (cards[c] || 0), 0);
}

function colorsIn(mandala) {
  return COLORS.filter((c) => mandala.mountain[c] + mandala.fields[0][c] + mandala.fields[1][c] > 0);
}

/** What a seat gains (R13, R21) by claiming `n` cards of `color`: the change of its score. */
function claimGain(side, color, n) {
  if (!side.eligible || n === 0) return 0;
  const slot = side.river.indexOf(color) + 1;
  if (slot > 0) return n * slot;
  if (side.river.length >= 6) return 0;
  const newSlot = side.river.length + 1;
  return (n - 1 + (side.cup[color] || 0)) * newSlot;
}

/** The side of `seat` as the simulation needs it: river, the cup cards it knows, eligibility. */
function sideOf(view, seat, fields) {
  const player = view.players[seat];
  const cup = seat === view.seat && view.private ? view.private.cup : player.cup_claimed;
  return { river: [...player.river], cup: { ...cup }, eligible: total(fields[seat]) > 0 };
}

/** Each picker claims the color worth most to it plus what it denies the other. */
function bestClaim(mountain, picker, other) {
  let best = null;
  let bestValue = -Infinity;
  for (const c of COLORS) {
    if (!mountain[c]) continue;
    const value = claimGain(picker, c, mountain[c]) + claimGain(other, c, mountain[c]);
    if (value > bestValue) {
      best = c;
      bestValue = value;
    }
  }
  return best;
}

/**
 * Play out a destruction of a mandala with these fields and mountain, both sides picking with
 * bestClaim, starting with `firstPicker`. Returns my gain minus the opponent's.
 */
function destructionValue(view, mountainIn, fields, firstPicker) {
  const me = view.seat;
  const sides = [sideOf(view, 0, fields), sideOf(view, 1, fields)];
  const mountain = { ...mountainIn };
  const net = [0, 0];
  let picker = firstPicker;
  for (;;) {
    const color = bestClaim(mountain, sides[picker], sides[1 - picker]);
    if (color === null) break;
    const side = sides[picker];
    net[picker] += claimGain(side, color, mountain[color]);
    if (side.eligible && !side.river.includes(color) && side.river.length < 6) {
      side.river.push(color);
      side.cup[color] = (side.cup[color] || 0) + mountain[color] - 1;
    } else if (side.eligible) {
      side.cup[color] = (side.cup[color] || 0) + mountain[color];
    }
    mountain[color] = 0;
    picker = 1 - picker;
  }
  return net[me] - net[1 - me];
}

/** R11: more cards in one's own field picks first; on a tie, the completer's opponent. */
function firstPicker(fields, completer) {
  const a = total(fields[0]);
  const b = total(fields[1]);
  return a > b ? 0 : b > a ? 1 : 1 - completer;
}

/** A mandala after the move: its mountain and fields, new objects. */
function mandalaAfter(mandala, move, seat) {
  const out = { mountain: { ...mandala.mountain }, fields: [{ ...mandala.fields[0] }, { ...mandala.fields[1] }] };
  if (move.type === 'mountain') out.mountain[move.color] += 1;
  if (move.type === 'field') out.fields[seat][move.color] += move.count;
  return out;
}

/** How much the opponent could win by completing a five-color mandala on its next turn. */
function threat(view, mandala) {
  const colors = colorsIn(mandala);
  if (colors.length !== 5) return 0;
  const missing = COLORS.find((c) => !colors.includes(c));
  const opp = 1 - view.seat;
  const mountain = { ...mandala.mountain, [missing]: mandala.mountain[missing] + 1 };
  return Math.max(0, -destructionValue(view, mountain, mandala.fields, firstPicker(mandala.fields, opp)));
}

function scoreTurnMove(view, move) {
  const me = view.seat;
  const hand = view.private.hand;
  const handSize = total(hand);
  let value = 0;
  const mandalas = view.mandalas.map((m, i) => (move.mandala === i ? mandalaAfter(m, move, me) : m));
  if (move.type === 'mountain' || move.type === 'field') {
    const m = mandalas[move.mandala];
    if (colorsIn(m).length === 6) {
      value += destructionValue(view, m.mountain, m.fields, firstPicker(m.fields, me));
      mandalas[move.mandala] = null; // destroyed: no threat left there
    }
  }
  if (move.type === 'mountain') {
    value += 0.35 * Math.min(3, 8 - (handSize - 1)); // the cards drawn (R6, R7)
    const mySlot = view.players[me].river.indexOf(move.color) + 1;
    const oppSlot = view.players[1 - me].river.indexOf(move.color) + 1;
    value += 0.1 * (mySlot - oppSlot);
  } else if (move.type === 'field') {
    const mine = total(view.mandalas[move.mandala].fields[me]);
    const mountainSize = total(view.mandalas[move.mandala].mountain);
    value += mine === 0 ? 1.5 + 0.1 * mountainSize : 0.3; // a claim on that mountain (R13a, R11)
    value -= 0.15 * (move.count - 1); // cards spent without drawing
  } else if (move.type === 'discard') {
    value += -0.8 + 0.05 * move.count;
  }
  for (const m of mandalas) if (m !== null) value -= 0.5 * threat(view, m);
  return value;
}

function scorePick(view, move) {
  const me = view.seat;
  const mandala = view.mandalas[view.destruction.mandala];
  const sides = [sideOf(view, 0, mandala.fields), sideOf(view, 1, mandala.fields)];
  const n = mandala.mountain[move.color];
  return claimGain(sides[me], move.color, n) + claimGain(sides[1 - me], move.color, n);
}

/** The legal move with the best heuristic value; the first legal move if the view is unusual. */
export function chooseMove(view, legal) {
  let best = legal[0];
  let bestValue = -Infinity;
  for (const move of legal) {
    let value;
    try {
      if (move.type === 'claim') value = scorePick(view, move);
      else if (move.type === 'pass') value = 0;
      else value = scoreTurnMove(view, move);
    } catch {
      value = -Infinity;
    }
    if (value > bestValue) {
      best = move;
      bestValue = value;
    }
  }
  return best;
}

// ------------------------------------------------------------------ the bot

const NO_RECONNECT = new Map([
  [4001, 'bad token'],
  [4002, 'unsupported protocol version'],
  [4009, 'replaced by a new connection of this bot'],
]);
const MAX_FAILED_CONNECTS = 8;
const MAX_BACKOFF_MS = 30000;
const RECHALLENGE_MS = 1000;
const MAX_RESEEKS = 3;
const PAIR_WAIT_MS = 15000;

function log(text) {
  process.stderr.write(`mandala-bot: ${text}\n`);
}

class Bot {
  constructor({ url, token, challenge, ladder, games, maxGames }) {
    Object.assign(this, { url, token, opponent: challenge, ladder, gamesWanted: games, maxGames });
    this.started = 0; // games begun (resumes not counted)
    this.finished = 0;
    this.games = new Map(); // game_id -> {seat, opponent, pairId, moves, refused, pending}
    this.openPairs = new Set(); // duplicate pairs (§18.3) whose return game has not started yet
    this.pairWait = false;
    this.ws = null;
    this.welcomed = false;
    this.failedConnects = 0;
    this.stopping = false;
    this.challengeOut = false;
    this.timers = new Set();
    this.reseeks = 0;
    this.unseekSent = false;
    this.removed = false; // removed from the ladder by the organizer, as the server last said
  }

  run() {
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.connect();
    });
  }

  later(ms, fn) {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  finish(code) {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.resolve(code);
  }

  stop(code) {
    this.stopping = true;
    this.exitCode = code;
    if (this.ws && this.ws.readyState !== 'closed') this.ws.close(1000, 'done');
    else this.finish(code);
  }

  connect() {
    log(`connecting to ${this.url}`);
    this.welcomed = false;
    this.challengeOut = false;
    this.unseekSent = false;
    this.pairWait = false;
    const ws = new WebSocketClient(this.url);
    this.ws = ws;
    ws.on('open', () =>
      this.send({ type: 'hello', protocol: PROTOCOL, token: this.token, max_games: this.maxGames, client: CLIENT_NAME }),
    );
    ws.on('message', (data, isBinary) => {
      if (isBinary) return log('ignored a binary frame');
      let msg;
      try {
        msg = JSON.parse(data);
      } catch {
        return log(`ignored a frame that is not JSON: ${data.slice(0, 80)}`);
      }
      try {
        this.handle(msg);
      } catch (err) {
        log(`failed on a ${msg.type} message: ${err.stack || err}`);
      }
      return undefined;
    });
    ws.on('error', (err) => log(`connection error: ${err.message}`));
    ws.on('close', (code, reason) => this.onClose(code, reason));
  }

  send(msg) {
    if (!this.ws.send(JSON.stringify(msg))) log(`could not send ${msg.type}: not connected`);
  }

  onClose(code, reason) {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.stopping) return this.finish(this.exitCode);
    if (NO_RECONNECT.has(code)) {
      log(`connection closed (${code} ${reason || NO_RECONNECT.get(code)}); not reconnecting`);
      return this.finish(1);
    }
    const why = `${code}${reason ? ` ${reason}` : ''}`;
    if (!this.welcomed) this.failedConnects += 1;
    if (this.failedConnects >= MAX_FAILED_CONNECTS) {
      log(`connection closed (${why}); giving up after ${this.failedConnects} failed attempts`);
      return this.finish(1);
    }
    const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** this.failedConnects);
    const delay = Math.round(backoff * (0.75 + Math.random() * 0.5));
    log(`connection closed (${why}); reconnecting in ${delay} ms`);
    this.later(delay, () => this.connect());
    return undefined;
  }

  /** Whether to begin another game (accept a challenge, challenge, seek). */
  wantMore() {
    return this.gamesWanted === undefined || this.started < this.gamesWanted;
  }

  /**
   * With --games N: once N games are over and none runs, stop, but first wait a while for the
   * return game of a duplicate pair whose first game was played (the server starts it even
   * after unseek). Returns whether no new game should be sought.
   */
  stopIfDone() {
    if (this.gamesWanted === undefined || this.finished < this.gamesWanted || this.games.size > 0) return false;
    if (this.openPairs.size === 0) {
      this.stop(0);
    } else if (!this.pairWait) {
      this.pairWait = true;
      log(`waiting up to ${PAIR_WAIT_MS / 1000} s for the return game of pair ${[...this.openPairs].join(', ')}`);
      this.later(PAIR_WAIT_MS, () => {
        this.openPairs.clear();
        this.stopIfDone();
      });
    }
    return true;
  }

  /** In --challenge mode, keep one challenge out while there is room for another game. */
  challengeAgain() {
    if (!this.opponent || this.challengeOut || !this.wantMore() || this.games.size >= this.maxGames) return;
    this.challengeOut = true;
    this.send({ type: 'challenge', opponent: this.opponent });
  }

  handle(msg) {
    switch (msg.type) {
      case 'welcome':
        return this.onWelcome(msg);
      case 'challenged':
        if (this.wantMore()) {
          log(`accepting the challenge of ${msg.challenger}`);
          this.send({ type: 'accept', challenge_id: msg.challenge_id });
        } else {
          this.send({ type: 'decline', challenge_id: msg.challenge_id });
        }
        return undefined;
      case 'challenge_declined':
        log(`challenge to ${this.opponent} declined (${msg.reason}); trying again in ${RECHALLENGE_MS} ms`);
        return this.later(RECHALLENGE_MS, () => {
          this.challengeOut = false;
          this.challengeAgain();
        });
      case 'game_start':
        return this.onGameStart(msg);
      case 'decision':
        return this.onDecision(msg);
      case 'move_accepted': {
        const game = this.games.get(msg.game_id);
        if (game) {
          game.moves += 1;
          game.pending = null;
        }
        return undefined;
      }
      case 'game_over':
        return this.onGameOver(msg);
      case 'error':
        return this.onError(msg);
      case 'ladder':
        return this.onLadder(msg);
      case 'opponent_away':
        return log(`game ${msg.game_id}: the opponent is away`);
      case 'opponent_back':
        return log(`game ${msg.game_id}: the opponent is back`);
      default:
        return undefined; // update, challenge_sent, pong, and anything newer: nothing to do
    }
  }

  onWelcome(msg) {
    this.welcomed = true;
    this.failedConnects = 0;
    log(`connected as ${msg.bot} (decisions: ${msg.limits.decision_ms} ms)`);
    for (const id of [...this.games.keys()]) {
      if (!msg.games.includes(id)) {
        // No game_over will come for a game that ended while this bot was away (§13).
        this.games.delete(id);
        this.finished += 1;
        log(`game ${id} ended while disconnected${this.progress()}`);
      }
    }
    if (this.stopIfDone()) return undefined;
    // Even after a removal: a restore while this bot was away is told by no message, so the
    // answer to this seek (`ladder`, or `error` `removed`) says where it stands.
    if (this.ladder && this.wantMore()) this.send({ type: 'seek' });
    this.challengeAgain();
    return undefined;
  }

  onGameStart(msg) {
    const opponent = msg.players.find((p) => p.seat !== msg.seat)?.name ?? '?';
    if (msg.resumed && this.games.has(msg.game_id)) {
      log(`game ${msg.game_id} resumed`);
      return;
    }
    const pairId = msg.pair_id ?? null;
    if (!msg.resumed) {
      this.started += 1;
      if (pairId !== null && !this.openPairs.delete(pairId)) this.openPairs.add(pairId);
    }
    this.games.set(msg.game_id, { seat: msg.seat, opponent, pairId, moves: 0, refused: 0, pending: null });
    this.challengeOut = false;
    const kind = `${msg.kind ?? 'game'}, ${msg.rated ? 'rated' : 'unrated'}`;
    log(`game ${msg.game_id} ${msg.resumed ? 'resumed' : 'started'}: seat ${msg.seat} against ${opponent} (${kind})`);
    if (this.ladder && !this.wantMore() && !this.unseekSent) {
      this.unseekSent = true;
      this.send({ type: 'unseek' });
    }
    this.challengeAgain();
  }

  onDecision(msg) {
    let game = this.games.get(msg.game_id);
    if (!game) {
      game = { seat: msg.seat, opponent: '?', pairId: null, moves: 0, refused: 0, pending: null };
      this.games.set(msg.game_id, game);
    }
    const move = chooseMove(msg.view, msg.legal);
    game.pending = { request_id: msg.request_id, legal: msg.legal, fellBack: false };
    this.send({ type: 'move', game_id: msg.game_id, request_id: msg.request_id, move });
  }

  onGameOver(msg) {
    const game = this.games.get(msg.game_id);
    this.games.delete(msg.game_id);
    this.finished += 1;
    const r = msg.result;
    const seat = game ? game.seat : null;
    let outcome = 'draw';
    if (r.end_reason === 'aborted') outcome = 'aborted';
    else if (r.winner !== null) outcome = r.winner === seat ? 'won' : 'lost';
    const scores = seat === 1 ? [r.scores[1], r.scores[0]] : r.scores;
    const against = game ? ` against ${game.opponent}` : '';
    const counts = game ? `, ${game.moves} moves, ${game.refused} refused` : '';
    log(`game ${msg.game_id} over: ${outcome} ${scores[0]}-${scores[1]} (${r.end_reason})${against}${counts}${this.progress()}`);
    if (r.end_reason === 'aborted' && game?.pairId) this.openPairs.delete(game.pairId); // the pair is dropped
    if (this.stopIfDone()) return undefined;
    this.challengeAgain();
    return undefined;
  }

  progress() {
    return this.gamesWanted === undefined ? '' : ` [${this.finished}/${this.gamesWanted}]`;
  }

  onError(msg) {
    if (msg.code === 'removed') return this.onRemoved(msg.message); // the answer to a seek while removed
    const where = msg.game_id ? ` (game ${msg.game_id}, request ${msg.request_id})` : '';
    const rule = msg.rule ? ` [${msg.rule}]` : '';
    log(`error ${msg.code}${rule}: ${msg.message}${where}`);
    const game = msg.game_id ? this.games.get(msg.game_id) : undefined;
    if (game) game.refused += 1;
    switch (msg.code) {
      case 'illegal_move':
      case 'invalid_message': {
        const pending = game?.pending;
        if (pending && pending.request_id === msg.request_id && !pending.fellBack) {
          pending.fellBack = true;
          const move = pending.legal[0];
          log(`answering request ${msg.request_id} of game ${msg.game_id} with the first legal move instead`);
          this.send({ type: 'move', game_id: msg.game_id, request_id: msg.request_id, move });
        }
        return undefined;
      }
      case 'unknown_bot':
      case 'challenge_self':
        log(`cannot challenge ${this.opponent}; stopping`);
        return this.stop(1);
      case 'bot_offline':
        if (this.challengeOut) {
          this.later(RECHALLENGE_MS, () => {
            this.challengeOut = false;
            this.challengeAgain();
          });
        }
        return undefined;
      case 'rate_limited':
      case 'storage_unavailable':
        if (this.challengeOut) {
          this.later(1000 * (msg.retry_after || 1), () => {
            this.challengeOut = false;
            this.challengeAgain();
          });
        }
        return undefined;
      default:
        return undefined;
    }
  }

  onLadder(msg) {
    log(`ladder: ${msg.message}`);
    if (msg.state === 'removed') return this.onRemoved(msg.message);
    if (this.removed) {
      this.removed = false;
      if (this.ladder && this.wantMore() && !msg.seeking && (msg.state === 'qualifying' || msg.state === 'listed')) {
        log('restored to the ladder by the organizer: seeking again');
        this.send({ type: 'seek' });
      }
    }
    if (msg.state === 'failed' && this.wantMore()) {
      this.reseeks += 1;
      if (this.reseeks > MAX_RESEEKS) {
        log('failed the ladder qualification too often; stopping');
        return this.stop(1);
      }
      this.send({ type: 'seek' });
    }
    return undefined;
  }

  /** The organizer's decision, not a failure: running games and challenges go on, the
   *  connection stays, only seeking stops (the server has stopped it already). */
  onRemoved(why) {
    if (!this.removed) {
      const said = why.startsWith('removed from the ladder') ? why : `removed from the ladder by the organizer: ${why}`;
      log(`${said}; playing on (running games, challenges), no more seeking`);
    }
    this.removed = true;
    return undefined;
  }
}

// ------------------------------------------------------------------ command line

const USAGE = `usage: node mandala-bot.mjs --url ws://HOST:PORT/ws --token TOKEN [--ladder | --challenge NAME]
                          [--games N] [--max-games K]
  --url URL         the server's WebSocket endpoint (default ws://127.0.0.1:8080/ws)
  --token TOKEN     the bot's token (or the environment variable MANDALA_TOKEN)
  --challenge NAME  challenge that bot, again after each game
  --ladder          join the ladder (seek) and play the games it starts
  --games N         stop after N games (default: play until interrupted)
  --max-games K     games played at once (hello's max_games, default 1)`;

function positiveInt(text, name) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, not ${text}`);
  return n;
}

const VALUE_OPTIONS = new Set(['--url', '--token', '--challenge', '--games', '--max-games']);

export function parseCommandLine(argv, env) {
  // A token may begin with "-", which parseArgs would take for an option: join each option
  // that takes a value with the word after it.
  const args = [];
  for (let i = 0; i < argv.length; i++) {
    if (VALUE_OPTIONS.has(argv[i]) && i + 1 < argv.length) {
      args.push(`${argv[i]}=${argv[i + 1]}`);
      i += 1;
    } else {
      args.push(argv[i]);
    }
  }
  const { values } = parseArgs({
    args,
    options: {
      url: { type: 'string', default: 'ws://127.0.0.1:8080/ws' },
      token: { type: 'string' },
      challenge: { type: 'string' },
      ladder: { type: 'boolean', default: false },
      games: { type: 'string' },
      'max-games': { type: 'string', default: '1' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return null;
  const token = values.token ?? env.MANDALA_TOKEN;
  if (!token) throw new Error('no token: pass --token or set MANDALA_TOKEN');
  if (values.ladder && values.challenge) throw new Error('--ladder and --challenge exclude each other');
  return {
    url: values.url,
    token,
    challenge: values.challenge,
    ladder: values.ladder,
    games: values.games === undefined ? undefined : positiveInt(values.games, '--games'),
    maxGames: Math.min(64, positiveInt(values['max-games'], '--max-games')),
  };
}

async function main() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 20) log(`Node ${process.versions.node} is older than 20; this bot is written for Node >= 20`);
  let options;
  try {
    options = parseCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (options === null) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const bot = new Bot(options);
  const interrupt = () => {
    log('interrupted; closing');
    bot.stop(130);
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const code = await bot.run();
  log(`done: ${bot.finished} game${bot.finished === 1 ? '' : 's'} played`);
  process.exit(code);
}

function invokedDirectly() {
  try {
    return realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false; // imported (by a test), or run from an evaluated string
  }
}

if (invokedDirectly()) main();

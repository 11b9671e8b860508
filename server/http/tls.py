"""HTTPS and WSS on the server's one port: the TLS context made from the operator's files, and
the listening site that accepts connections, counts each against its address for as long as it
is open and gives up on one whose handshake does not finish in time.

asyncio's own TLS server (``create_server(ssl=…)``) makes the connection's protocol before
the handshake and tells it nothing of the client until the handshake is over, so nothing could
count a client that opens connections and never finishes a handshake. Here each accepted socket
is first counted against its address (``connections_per_ip``, as a WebSocket is), then handed
to ``loop.connect_accepted_socket`` with the TLS context and ``tls_handshake_timeout_s``. The
count is given back when the connection closes: a failed handshake at once, else when the
connection is lost (:class:`_Counted` sees it), which for a client that never answers the
server's closing of TLS is ``tls_handshake_timeout_s`` after it (the loop's default is 30 s).
So a client that finishes its handshakes and then says nothing holds no more connections than
its share, and each is closed once it has been idle for ``idle_timeout_s`` (:func:`tls_runner`).
A WebSocket on such a connection is this one count (``api.connection_slot`` takes none for it). A request that arrives by TLS is
``request.secure`` (aiohttp reads it off the transport).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from aiohttp import web

from ..config import ConfigError, Settings
from ..connections.peers import AddressCap

log = logging.getLogger(__name__)

ACCEPT_BACKOFF_S = 0.1
"""After an accept that failed for want of file descriptors, the pause before the next one
(the connections being closed free some meanwhile)."""


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    """The server's TLS context: TLS 1.2 or newer, the ``ssl`` module's defaults for a
    server (no compression, forward-secret ciphers first), HTTP/1.1 offered by ALPN.
    Raises :class:`ConfigError` naming the file that cannot be read or used."""
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        try:
            Path(path).read_bytes()
        except OSError as e:
            # A relative path is the working directory's (``/`` under systemd): say where it looked.
            where = "" if Path(path).is_absolute() else f" (that is {Path(path).absolute()})"
            raise ConfigError(f"{flag} {path}{where}: cannot read it: {e.strerror or e}") from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as e:
        raise ConfigError(f"{_which_is_wrong(cert, key)} ({e.reason or e})") from None
    return context


def _which_is_wrong(cert: str, key: str) -> str:
    """Which of the two files ``load_cert_chain`` refused, in words (OpenSSL says only "PEM lib")."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        probe.load_verify_locations(cert)
    except ssl.SSLError:
        return f"--tls-cert {cert}: not a PEM certificate"
    return f"--tls-key {key}: not the PEM private key of the certificate in --tls-cert {cert}"


def tls_runner(app: web.Application, settings: Settings, **kwargs: Any) -> web.AppRunner:
    """The runner of the TLS site: an HTTP connection with no request in progress is closed after
    ``idle_timeout_s``, as ``web.run_app`` is told for a plain one (aiohttp's own runner keeps one
    for an hour)."""
    return web.AppRunner(app, keepalive_timeout=settings.idle_timeout_s, **kwargs)


class _Counted(asyncio.Protocol):
    """The application's protocol for one TLS connection, passed every call through, that gives
    its address's count back when the connection is lost."""

    def __init__(self, inner: asyncio.Protocol, give_back: Callable[[], None]) -> None:
        self._inner = inner
        self._give_back: Callable[[], None] | None = give_back

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._inner.connection_lost(exc)
        finally:
            self.release()

    def release(self) -> None:
        """Give the count back (once)."""
        give_back, self._give_back = self._give_back, None
        if give_back is not None:
            give_back()


class TlsSite(web.BaseSite):
    """HTTPS and WSS on ``host``:``port`` for ``runner``'s application (``port`` 0: any free
    port, :attr:`port` says which)."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, context: ssl.SSLContext, settings: Settings,
                 addresses: AddressCap, backlog: int = 128) -> None:
        super().__init__(runner, ssl_context=context, backlog=backlog)
        self._host = host
        self._port = port
        self._handshake_timeout = settings.tls_handshake_timeout_s
        self._addresses = addresses
        self._sockets: list[socket.socket] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def name(self) -> str:
        return f"https://{self._host}:{self.port}"

    @property
    def port(self) -> int:
        return int(self._sockets[0].getsockname()[1]) if self._sockets else self._port

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, address = infos[0]
        sock = socket.create_server(address[:2], family=family, backlog=self._backlog)
        sock.setblocking(False)
        self._sockets.append(sock)
        self._spawn(self._accept(sock))

    async def stop(self) -> None:
        for sock in self._sockets:
            sock.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._runner._unreg_site(self)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, peer = await loop.sock_accept(sock)
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("accepting a connection failed: %s", e.strerror or e)
                    await asyncio.sleep(ACCEPT_BACKOFF_S)
                    continue
                if sock.fileno() < 0:  # closed by stop()
                    return
                log.warning("accepting a connection failed: %s", e)
                continue
            address = str(peer[0]) if isinstance(peer, tuple) else "?"
            if not self._addresses.take(address):
                log.debug("TLS connection from %s refused: it holds %d connections", address, self._addresses.limit)
                conn.close()
                continue
            self._spawn(self._handshake(conn, address))

    async def _handshake(self, conn: socket.socket, address: str) -> None:
        """Hand one accepted socket to the application once its TLS handshake is over (or
        close it); the connection holds one of ``address``'s connections until it closes."""
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None and self._ssl_context is not None
        counted = _Counted(server(), lambda: self._addresses.give_back(address))
        began = loop.time()
        try:
            await loop.connect_accepted_socket(lambda: counted, conn, ssl=self._ssl_context,
                                               ssl_handshake_timeout=self._handshake_timeout,
                                               ssl_shutdown_timeout=self._handshake_timeout)
        except ssl.SSLError as e:
            if e.reason == "HTTP_REQUEST":
                log.info("a plain HTTP request from %s on the TLS port: closed (use https:// and wss://)", address)
            else:
                log.debug("TLS handshake with %s failed: %s", address, e.reason or repr(e))
            conn.close()
            counted.release()
        except OSError as e:  # the timeout is one (ConnectionAbortedError, or TimeoutError on uvloop)
            if loop.time() - began >= self._handshake_timeout:
                log.info("TLS handshake with %s not finished within %g s: closed", address, self._handshake_timeout)
            else:
                log.debug("TLS handshake with %s failed: %s", address, e)
            conn.close()
            counted.release()
        except asyncio.CancelledError:
            conn.close()
            counted.release()
            raise

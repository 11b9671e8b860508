"""A certificate authority made in the test, with the ``cryptography`` package: its CA file
for the clients, and server certificates it signs (for given names, valid, expired or not
for the address the client uses), written as PEM files the server loads as an operator's.
And a server with TLS on, in this process, through the same site ``mandala serve`` uses."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import os
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from arena_testkit import ADMIN, SERVE, free_port, settings_for
from server.app import create_app
from server.arena import ARENA
from server.http.tls import TlsSite, tls_context, tls_runner

DAY = dt.timedelta(days=1)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class Issued:
    cert: Path
    key: Path


class Ca:
    """A root CA written to ``folder/ca.pem``; :meth:`issue` signs server certificates."""

    def __init__(self, folder: Path, name: str = "Mandala test CA") -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY).not_valid_after(now + 30 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        self.file = folder / "ca.pem"
        self.file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, names: tuple[str, ...] = ("127.0.0.1", "localhost"), expired: bool = False) -> Issued:
        """A server certificate for ``names`` (IP addresses or DNS names) and its key, as
        ``stem.pem`` and ``stem.key``; ``expired``: its validity ended yesterday."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        start, end = (now - 10 * DAY, now - DAY) if expired else (now - DAY, now + 10 * DAY)
        alt: list[x509.GeneralName] = []
        for n in names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(n)))
            except ValueError:
                alt.append(x509.DNSName(n))
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(names[0])).issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        issued = Issued(self.folder / f"{stem}.pem", self.folder / f"{stem}.key")
        issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        issued.key.write_bytes(_pem_key(key))
        issued.key.chmod(0o600)
        return issued

    def client_context(self) -> ssl.SSLContext:
        """What a client that trusts this CA (and only it) verifies a server with."""
        return ssl.create_default_context(cafile=str(self.file))


class TlsArena:
    """A server with TLS on, in this process: its ``url`` (``https://127.0.0.1:PORT``), its
    ``ws_url`` (``wss://…/ws``) and its arena. Tests reach it with aiohttp sessions that verify
    it with ``ca.client_context()``, as a bot would."""

    def __init__(self, runner: web.AppRunner, site: TlsSite) -> None:
        self.runner = runner
        self.site = site
        self.url = f"https://127.0.0.1:{site.port}"
        self.ws_url = f"wss://127.0.0.1:{site.port}/ws"

    @property
    def arena(self) -> Any:
        return self.runner.app[ARENA]

    async def close(self) -> None:
        await self.runner.cleanup()


async def tls_arena(db: Path, issued: Issued, **overrides: Any) -> TlsArena:
    """Start the server with ``issued``'s certificate on a free port of 127.0.0.1."""
    settings = settings_for(db, tls_cert=str(issued.cert), tls_key=str(issued.key), **overrides)
    app = create_app(settings)
    runner = tls_runner(app, settings)
    await runner.setup()
    site = TlsSite(runner, "127.0.0.1", 0, tls_context(str(issued.cert), str(issued.key)), settings,
                   app[ARENA].addresses)
    await site.start()
    return TlsArena(runner, site)


class Tap:
    """A TCP relay to ``127.0.0.1:port`` that keeps every byte passing either way, as a capture
    of the wire would (``captured``): what an eavesdropper on the path sees."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.captured = bytearray()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Tap:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target)

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while chunk := await r.read(1 << 16):
                    self.captured += chunk
                    w.write(chunk)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()

        tasks = [asyncio.ensure_future(pump(client_r, server_w)), asyncio.ensure_future(pump(server_r, client_w))]
        self._tasks.update(tasks)
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.difference_update(tasks)


def serve_tls(ca: Ca, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``mandala serve`` as an operator starts it (a process, uvloop), its certificate from
    ``ca`` given by the environment, on a free port, its log in ``folder``; and that port.
    Its banner comes on the process's stdout; the caller stops it."""
    issued = ca.issue("server")
    port = free_port()
    env = {**os.environ, "MANDALA_TLS_CERT": str(issued.cert), "MANDALA_TLS_KEY": str(issued.key),
           "MANDALA_ADMIN_TOKEN": ADMIN}
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", SERVE, "serve", "--port", str(port), "--db",
                                 str(folder / "x.db")], env=env, stdout=subprocess.PIPE, stderr=log)
    return proc, port

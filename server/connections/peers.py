"""Who a request comes from: the socket's peer, or behind a trusted proxy the client it names;
and whether it came by TLS, here or to that proxy."""

from __future__ import annotations

import ipaddress

from aiohttp import web

from ..config import Settings
from .ratelimit import KeyedBuckets


def _last(request: web.Request, header: str) -> str | None:
    """The last value of ``header`` across all its lines and commas: the one the proxy added.
    A proxy appends its own line after whatever the client sent (HAProxy's ``option
    forwardfor`` does), so any earlier value may be the client's own invention."""
    lines = request.headers.getall(header, [])
    if not lines:
        return None
    return lines[-1].rsplit(",", 1)[-1].strip() or None


def client_address(request: web.Request, settings: Settings) -> str:
    """The client's address. With ``trust_forwarded_for`` it is the last address of
    ``X-Forwarded-For`` (the one the proxy itself added), else the socket's peer."""
    if settings.trust_forwarded_for:
        forwarded = _last(request, "X-Forwarded-For")
        if forwarded:
            return forwarded
    return request.remote or "?"


def arrived_by_tls(request: web.Request, settings: Settings) -> bool:
    """Whether the request came by TLS: to this server (HTTPS, WSS), or, with
    ``trust_forwarded_for``, to the proxy, as the last value of its ``X-Forwarded-Proto``
    says (HAProxy sets it: ``deploy/haproxy.cfg``)."""
    if request.secure:
        return True
    if settings.trust_forwarded_for:
        proto = _last(request, "X-Forwarded-Proto")
        if proto:
            return proto.lower() == "https"
    return False


def is_loopback(address: str) -> bool:
    """Whether a client address is this machine's own (127.0.0.0/8, ::1, and IPv4 on IPv6)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def token_allowed(request: web.Request, settings: Settings) -> bool:
    """Whether a token may travel on this request under ``require_tls``: it came by TLS, or
    from loopback (the client address: behind a trusted proxy, the one it names)."""
    return (not settings.require_tls or arrived_by_tls(request, settings)
            or is_loopback(client_address(request, settings)))


IPV6_CLIENT_PREFIX = 64
"""The IPv6 network one client is counted by: a host (a rented server, a home line) is given a
whole /64, 2⁶⁴ addresses it may use as it likes, so counted by address it would have no limit."""


def client_key(address: str) -> str:
    """What the per-address limits (connections, registrations) count ``address`` as: an IPv4
    address as it is, an IPv6 address as its /64 network (an IPv4 one written in IPv6 as that
    IPv4 address), anything else as it is."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_CLIENT_PREFIX), strict=False))
    return address


class AddressCap:
    """At most ``limit`` open WebSocket connections per client (0: no limit), so one client
    cannot hold thousands on a public server; ``exempt`` addresses are never capped. A client
    is its address, or for IPv6 its /64 (:func:`client_key`)."""

    def __init__(self, limit: int, exempt: list[str]) -> None:
        self.limit = limit
        self.exempt = frozenset(exempt)
        self.open: dict[str, int] = {}

    def take(self, address: str) -> bool:
        """Count one more connection from ``address``; False (nothing counted) at the limit."""
        if not self.limit or address in self.exempt:
            return True
        key = client_key(address)
        held = self.open.get(key, 0)
        if held >= self.limit:
            return False
        self.open[key] = held + 1
        return True

    def give_back(self, address: str) -> None:
        """A connection ``take`` counted has closed. An exempt address's was never counted: its
        /64 may hold other clients' counts, which its close must leave as they are."""
        if not self.limit or address in self.exempt:
            return
        key = client_key(address)
        held = self.open.get(key)
        if held is None:
            return
        if held <= 1:
            del self.open[key]
        else:
            self.open[key] = held - 1


class AddressBudget:
    """A token bucket for each client (an address, or for IPv6 its /64: :func:`client_key`),
    beside what a single connection may send: ``/ws`` frames of all of a client's connections
    together (``messages_per_second_per_ip``), or its HTTP requests
    (``requests_per_second_per_ip``). ``exempt`` addresses have none; a rate of 0 is no limit."""

    def __init__(self, rate: float, burst: int, exempt: list[str]) -> None:
        self.rate = rate
        self.burst = burst
        self.exempt = frozenset(exempt)
        self.buckets = KeyedBuckets(rate, burst)

    def take(self, address: str, now: float) -> float | None:
        """Charge one to ``address``'s client: ``None`` if allowed, else the seconds to wait."""
        if not self.rate or address in self.exempt:
            return None
        return self.buckets.take(client_key(address), now)

"""How the clients check a ``wss://`` or ``https://`` server: with the system's trust store,
plus the CA file of a private certificate authority when one is given (``--ca-file``,
``$MANDALA_CA_FILE``). There is no way to skip the check: a certificate that does not verify
stops the client with the URL and the reason."""

from __future__ import annotations

import ssl

from .credentials import CA_FILE_ENV


class TlsSetupError(ValueError):
    """A CA file that cannot be used; the message names it."""


def client_context(ca_file: str | None = None) -> ssl.SSLContext:
    """A context that verifies the server's certificate and name against the system's trust
    store and, if given, the certificates in ``ca_file`` (PEM)."""
    context = ssl.create_default_context()
    if ca_file:
        try:
            context.load_verify_locations(cafile=ca_file)
        except FileNotFoundError:
            raise TlsSetupError(f"--ca-file {ca_file}: no such file") from None
        except OSError as e:
            raise TlsSetupError(f"--ca-file {ca_file}: cannot read it: {e.strerror or e}") from None
        except ssl.SSLError as e:
            raise TlsSetupError(f"--ca-file {ca_file}: not a PEM certificate ({e.reason or e})") from None
    return context


def explain(url: str, error: BaseException | None) -> str | None:
    """What a failed TLS connection to ``url`` means, in words (``None`` if ``error`` is not a
    TLS failure). Takes the ``ssl`` module's errors, and aiohttp's and urllib's wrapping them."""
    for _ in range(4):  # the ssl error itself, or wrapped in one or two others
        inner = getattr(error, "certificate_error", None) or getattr(error, "os_error", None)
        if isinstance(inner, ssl.SSLError):  # aiohttp's (which may also be an ssl error itself)
            error = inner
        if isinstance(error, ssl.SSLCertVerificationError):
            reason = error.verify_message or error.reason or str(error)
            return (f"cannot connect to {url}: the server's certificate does not verify: {reason}. If the server's "
                    f"certificate comes from a private certificate authority, give its CA file with --ca-file "
                    f"or ${CA_FILE_ENV}")
        if isinstance(error, ssl.SSLError):
            reason = error.reason or str(error)
            hint = (" Does the server serve TLS? One without it is reached at ws:// or http://"
                    if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG") else "")
            return f"cannot connect to {url}: the TLS handshake failed: {reason}.{hint}"
        if error is None:
            return None
        error = next((e for e in (getattr(error, "reason", None), error.__cause__) if isinstance(e, BaseException)), None)
    return None

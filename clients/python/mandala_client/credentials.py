"""Where a command line finds a bot's token, and how it keeps it out of sight.

In order: ``--token=VALUE`` or ``--token VALUE`` (seen by every user of the machine in ``ps``:
for a quick try), ``--token-file FILE`` (the file's one line), ``$MANDALA_TOKEN``. A token
the server issued before tokens began with ``mdl_`` may begin with ``-``;
:func:`join_values` makes ``--token -abc…`` mean what it says.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

TOKEN_ENV = "MANDALA_TOKEN"
CA_FILE_ENV = "MANDALA_CA_FILE"
TOKEN_MAX = 1000
"""No token is longer (a file much longer is not a token file)."""


class CredentialError(ValueError):
    """A token that cannot be read; the message names where it was looked for."""


def join_values(argv: Sequence[str], options: Iterable[str]) -> list[str]:
    """``argv`` with each of ``options`` joined to the word after it (``--token -abc`` becomes
    ``--token=-abc``), so argparse takes that word as the value even when it begins with ``-``."""
    valued = set(options)
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            out.append(word)
            out.extend(words)
            break
        if word in valued:
            value = next(words, None)
            out.append(word if value is None else f"{word}={value}")
        else:
            out.append(word)
    return out


def read_token_file(path: str | Path) -> str:
    """The token in ``path``: its one line, without the spaces and line end around it."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            raw = f.read(TOKEN_MAX + 1)
    except OSError as e:
        raise CredentialError(f"--token-file {p}: cannot read it: {e.strerror or e}") from None
    try:
        token = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CredentialError(f"--token-file {p}: not a token (not text)") from None
    if len(raw) > TOKEN_MAX or not token or any(c.isspace() for c in token):
        raise CredentialError(f"--token-file {p}: not a token (it holds one line, the token)")
    return token


def exposed(path: str | Path) -> str | None:
    """A warning if others may read the token file (it should be ``chmod 600``), else ``None``."""
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return None
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"{path} may be read by other users of this machine: chmod 600 {path}"
    return None


def can_write_token_file(path: str | Path) -> None:
    """Make sure a token can be written to ``path`` before asking a server for it (a token is
    shown once): its folder is made (readable by its owner only) if missing, and a file is
    tried beside it. Raises :class:`CredentialError` naming the problem."""
    p = Path(path)
    part = p.with_name(p.name + ".part")
    try:
        p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        part.unlink()
        if p.is_dir():
            raise IsADirectoryError(21, "it is a folder")
    except OSError as e:
        raise CredentialError(f"cannot write {p}: {e.strerror or e}") from None


def write_token_file(path: str | Path, token: str) -> None:
    """Write ``token`` to ``path``, readable by its owner only, whole or not at all (a file
    beside it renamed over it); its folder is made if missing."""
    p = Path(path)
    part = p.with_name(p.name + ".part")
    try:
        p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
        os.chmod(part, 0o600)
        os.replace(part, p)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise CredentialError(f"cannot write {p}: {e.strerror or e}") from None


def find_token(token: str | None, token_file: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The token from ``--token``, else ``--token-file``, else ``$MANDALA_TOKEN``; ``None``
    if none is given. Raises :class:`CredentialError` for an unreadable file."""
    if token:
        return token
    if token_file:
        return read_token_file(token_file)
    env = os.environ if environ is None else environ
    return env.get(TOKEN_ENV) or None

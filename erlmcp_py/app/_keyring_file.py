"""The ``requestState`` key ring of ``erlmcp-py serve --keyring FILE``: read, or created with
one fresh key when the file does not exist."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from erlmcp_py.core.state_token import KeyRing

__all__ = ["STATE_KEYS_ENV", "state_keyring"]

#: Environment variable holding the ``requestState`` key ring when ``--keyring`` is not given.
STATE_KEYS_ENV = "ERLMCP_STATE_KEYS"


def state_keyring(
    path: str | None, environ: Mapping[str, str], *, create: bool = True
) -> KeyRing | None:
    """The ``requestState`` key ring: from the file ``--keyring`` names (created with one
    fresh key when it does not exist), else from the environment variable
    :data:`STATE_KEYS_ENV`, else ``None``.

    The format is :func:`~erlmcp_py.core.state_token.parse_keyring`'s: ``KID=KEY`` entries
    (base64 of at least 32 random bytes), the first one sealing, the others still opening.
    Every process that serves one endpoint (behind a load balancer, or the next process after
    a restart) needs the same ring: point them all at one file.

    Args:
        path: The file, or ``None``.
        environ: The environment.
        create: Create a missing file; else only check that it could be (``check-config``),
            and return ``None`` for it.

    Raises:
        ValueError: the file cannot be read or created, or the ring is invalid (the message
            never shows a key).
    """
    from erlmcp_py.core.state_token import parse_keyring

    if path is not None:
        if not create and not os.path.exists(path):
            _check_creatable(path)
            return None
        try:
            text = _read_or_create_keyring(path)
        except _CreateError as exc:
            raise ValueError(f"cannot create {path}: {exc.strerror}") from None
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror}") from None
        return parse_keyring(text)
    value = environ.get(STATE_KEYS_ENV)
    return parse_keyring(value) if value else None


class _CreateError(OSError):
    """The missing key file could not be created."""


def _check_creatable(path: str) -> None:
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"cannot create {path}: {os.strerror(errno.ENOENT)}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot create {path}: {os.strerror(errno.EACCES)}")


def _read_or_create_keyring(path: str) -> str:
    """The key file's text; a missing file is first created with one fresh key, readable by
    its owner only (mode 0600).

    The new file is written aside and hard-linked into place, which fails if the name exists:
    of several replicas starting at once on one shared file, one creates it and every other
    reads that one, never a half-written file.
    """
    import base64
    import secrets
    import tempfile
    import time

    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        pass
    kid = f"{time.strftime('%Y%m%d', time.gmtime())}-{secrets.token_hex(3)}"
    text = f"{kid}={base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()}\n"
    try:
        fd, aside = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".keyring-")
    except OSError as exc:
        raise _CreateError(exc.errno, exc.strerror) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:  # mkstemp: mode 0600
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            with open(path, encoding="utf-8") as file:
                return file.read()
    finally:
        os.unlink(aside)
    return text

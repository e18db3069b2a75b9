"""The session era's version negotiation and the client capabilities a request declares.

Pure: no I/O. The versions themselves are :mod:`erlmcp_py.core.versions`; 2026-07-28 is not
negotiated through ``initialize`` and is not handled here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from erlmcp_py.core.versions import LATEST_SESSION_VERSION, SESSION_VERSIONS, V_2025_06_18

__all__ = [
    "ClientCapabilities",
    "negotiate_version",
]


def negotiate_version(requested: str) -> str:
    """Pick the version to answer ``initialize`` with.

    The spec: a server that supports the requested version MUST answer with it; otherwise it
    answers with another version it supports (the latest). The client decides whether it can
    live with that.

    Args:
        requested: ``params.protocolVersion`` of the client's ``initialize``.

    Returns:
        ``requested`` when supported, else :data:`LATEST_SESSION_VERSION`.
    """
    return requested if requested in SESSION_VERSIONS else LATEST_SESSION_VERSION


@dataclass(frozen=True, slots=True)
class ClientCapabilities:
    """What a client declared in ``initialize.params.capabilities``, as the server may use it.

    Attributes:
        elicitation_modes: The elicitation modes we may send. ``elicitation: {}`` means form
            only (backwards compatibility); URL mode exists from 2025-11-25 on only.
        sampling: The client declared ``sampling``.
        roots: The client declared ``roots``.
        raw: The declared capabilities object as received.
    """

    elicitation_modes: frozenset[str] = frozenset()
    sampling: bool = False
    roots: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, caps: Mapping[str, Any] | None, version: str) -> ClientCapabilities:
        """Read the capabilities object for a negotiated ``version``.

        Args:
            caps: ``initialize.params.capabilities`` (already checked to be an object).
            version: The negotiated protocol version.

        Returns:
            The capabilities; unknown members are kept in :attr:`raw` only.
        """
        caps = caps or {}
        modes: set[str] = set()
        elicitation = caps.get("elicitation")
        if isinstance(elicitation, Mapping):
            declared = {m for m in ("form", "url") if isinstance(elicitation.get(m), Mapping)}
            if version == V_2025_06_18:
                declared = {"form"}  # 2025-06-18 has form mode only, whatever is declared
            modes = declared or {"form"}  # "{}" is form only
        return cls(
            elicitation_modes=frozenset(modes),
            sampling=isinstance(caps.get("sampling"), Mapping),
            roots=isinstance(caps.get("roots"), Mapping),
            raw=dict(caps),
        )

    def supports(self, mode: str) -> bool:
        """Whether the client accepts ``elicitation/create`` in ``mode`` (``form``/``url``)."""
        return mode in self.elicitation_modes

    def declares_extension(self, name: str) -> bool:
        """Whether the client declared the extension ``name`` (an object under
        ``capabilities.extensions``, e.g. ``io.modelcontextprotocol/tasks``)."""
        extensions = self.raw.get("extensions")
        return isinstance(extensions, Mapping) and isinstance(extensions.get(name), Mapping)

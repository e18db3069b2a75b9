"""``erlmcp-py connect``: what the user sees of one server — elicitations, notifications, Ctrl-C.

Theory of operation
-------------------
Elicitations are shown one at a time (a lock), as prompts on the :class:`~._console.Terminal`.
Ctrl-C reaches :meth:`ConnectApp.interrupt` (the console hands it to trio) and stops the
innermost thing running: while an elicitation is on screen, Ctrl-C cancels that prompt and the
elicitation is answered ``cancel``; while a request runs (a tool call waiting for a URL-mode
page, a slow tool, a prompt, a read), it stops the request (the wire tells the server:
``notifications/cancelled`` on stdio, the POST closed on HTTP) and the REPL prompt comes back;
at the REPL prompt it leaves the client with status 130. A request's answer is shown once the
elicitation on screen has ended (a server closes its question before it answers the call).
While a task is followed (:mod:`~._tasks`), Ctrl-C stops the following first, even with one of
its questions on screen: the user then chooses what becomes of the task.

A question the server withdraws (``notifications/cancelled`` for the request on screen: the
wire cancels its task) ends its prompt, and the user is told the server closed it.

Server notifications are printed as they arrive, above the open prompt, which is then shown
again: the deadline warning (the server's own message, in the locale the client declared;
``Closing in {seconds}s`` when it sends none), log messages, progress, and the end of a
URL-mode page.
"""

from __future__ import annotations

import json
import math
import webbrowser
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import trio

from erlmcp_py.client import ClientRequestError
from erlmcp_py.connect._console import Terminal
from erlmcp_py.connect._render import Answer, ask_form, ask_url
from erlmcp_py.core.i18n import Texts

__all__ = ["ConnectApp"]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(eq=False)
class ConnectApp:
    """What the user sees of one server: elicitations, notifications and Ctrl-C.

    Attributes:
        io: The terminal.
        t: The catalog in the user's locale.
        open_page: Opens a URL in the browser (``webbrowser.open``: true when it did).
    """

    io: Terminal
    t: Texts
    open_page: Callable[[str], object] = webbrowser.open
    _lock: trio.Lock = field(default_factory=trio.Lock)
    _current: trio.CancelScope | None = None
    _call: trio.CancelScope | None = None
    _task: trio.CancelScope | None = None
    _pages: set[str] = field(default_factory=set)
    _withdrawn_by_server: bool = False

    async def on_request(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Answer a server request: ``elicitation/create`` on screen, ``ping``, ``roots/list``.

        Raises:
            ClientRequestError: any other method (``-32601``).
        """
        if method == "elicitation/create":
            return (await self.elicit(params)).result()
        if method == "ping":
            return {}
        if method == "roots/list":
            return {"roots": []}
        self.io.say(self.t("server_request_unsupported", method=method))
        raise ClientRequestError(-32601, "Method not found")

    async def elicit(self, params: Mapping[str, Any], *, follow: bool = True) -> Answer:
        """Show one elicitation (form or URL mode) and return the user's answer.

        Args:
            params: The ``elicitation/create`` params.
            follow: After a URL-mode ``accept``, say that the client waits for the page and
                announce its ``notifications/elicitation/complete``; ``False`` for the pages
                of a ``-32042`` error, whose call has already ended.
        """
        message = str(params.get("message", ""))
        async with self._lock:
            with trio.CancelScope() as scope:
                self._current = scope
                try:
                    if params.get("mode") == "url":
                        answer = await ask_url(
                            self.io, self.t, message, str(params.get("url", "")), self.open_page
                        )
                        page = params.get("elicitationId")
                        if follow and answer.action == "accept" and isinstance(page, str):
                            self._pages.add(page)
                            self.io.say(self.t("url_waiting"))
                    else:
                        schema = params.get("requestedSchema")
                        answer = await ask_form(
                            self.io, self.t, message, schema if isinstance(schema, Mapping) else {}
                        )
                except trio.Cancelled:
                    if self._withdrawn_by_server:  # not Ctrl-C (that is our scope): the server
                        self.io.say(self.t("closed_by_server"))
                    raise
                finally:
                    self._current = None
                    self._withdrawn_by_server = False
            if scope.cancelled_caught:
                self.io.say(self.t("cancelled"))
                self.io.say(self.t("interrupt_exits"))
                return Answer("cancel")
            return answer

    def interrupt(self) -> bool:
        """Ctrl-C: stop following a task (a question of it on screen too), else cancel the
        elicitation on screen, else stop the running request; ``False`` when there is none of
        them (the client leaves)."""
        for scope in (self._task, self._current, self._call):
            if scope is not None:
                scope.cancel()
                return True
        return False

    @contextmanager
    def task_scope(self) -> Iterator[trio.CancelScope]:
        """A scope Ctrl-C cancels before any other: following a task, or the choice of what
        to do with it (:mod:`~._tasks`)."""
        with trio.CancelScope() as scope:
            self._task = scope
            try:
                yield scope
            finally:
                self._task = None

    async def stoppable(
        self, stopped: str, request: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> R | None:
        """``await request(...)``, which Ctrl-C can stop; ``None`` when it was stopped (and
        the catalog's ``stopped`` text was said)."""
        with trio.CancelScope() as scope:
            self._call = scope
            try:
                result = await request(*args, **kwargs)
                # An elicitation of this request the server closed (it does so before it
                # answers) ends on screen, saying so, before the answer is shown.
                async with self._lock:
                    return result
            finally:
                self._call = None
        self.io.say(self.t(stopped))
        self.io.say(self.t("interrupt_exits"))
        return None

    def on_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """Print what a notification tells the user."""
        if method == "notifications/message":
            data = params.get("data")
            if params.get("level") == "warning" and isinstance(data, Mapping):
                seconds = data.get("remainingSeconds")
                if isinstance(seconds, int | float):
                    said = data.get("message")  # the server's words, in the declared locale
                    text = (
                        said
                        if isinstance(said, str) and said.strip()
                        else self.t("mcp.elicitation.timeout_warning", seconds=math.ceil(seconds))
                    )
                    self.io.say(f"⚠ {text}")
                    return
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            self.io.say(self.t("server_log", level=params.get("level", "info"), text=text))
        elif method == "notifications/cancelled":
            # The wire has cancelled the request named; if it is the question on screen, its
            # prompt ends as the cancellation reaches it, and says why.
            self._withdrawn_by_server = self._current is not None
        elif method == "notifications/elicitation/complete":
            if params.get("elicitationId") in self._pages:
                self._pages.discard(params["elicitationId"])
                self.io.say(self.t("url_done"))
        elif method == "notifications/progress":
            total = params.get("total")
            self.io.say(
                self.t(
                    "progress",
                    progress=params.get("progress"),
                    total="" if total is None else f"/{total}",
                )
            )

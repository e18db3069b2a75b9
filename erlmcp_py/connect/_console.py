"""The keyboard and the screen of ``erlmcp-py connect``: line editing, history and Ctrl-C.

Theory of operation
-------------------
Line editing is the standard library's :mod:`readline`, which edits a line only inside a call
to :func:`input`; and only a signal handler of the main thread can end that call early (an
exception raised from the handler ends the read, and readline puts the terminal back). So the
main thread owns the terminal, as a :class:`Console`, and trio runs in a thread of its own
(:meth:`Console.run`). Its :class:`Terminal` (a :class:`~._render.Prompter`) posts commands to
the console, which serves them in the order they were posted, so what is printed and what is
asked appear in the order the client said them:

* ``ask``: open a prompt; the line typed goes back to the ``Terminal`` through the trio token
  (``None`` at the end of input: Ctrl-D, or a pipe's end). Prompts nest: the newest one is on
  screen, and the one below comes back when it is answered.
* ``withdraw``: nobody waits for that prompt any more (its form was cancelled); its line ends.
* ``write``: text, shown above the open prompt, which is then shown again with what was typed
  so far.
* ``stop``: the client is done.

While :func:`input` runs, a command also rings the main thread (``SIGUSR1``). The handler ends
the read by raising, and only while readline holds the terminal in its own mode (not
canonical): that is, inside :func:`input` before the line is complete, so a finished line is
never lost. A ring that lands anywhere else (before readline set the terminal up, or while it
handled a key, when no system call is interrupted) is rung again every 20 ms by a small thread,
until the console has taken the command.

Ctrl-C is the main thread's ``SIGINT`` handler: it tells trio, which decides (cancel the form,
stop the call, or leave: see :class:`~._app.ConnectApp`). Inside :func:`input` it also ends the
line with ``^C`` (readline keeps the terminal from echoing it), and that prompt is not shown
again until the console takes another command: the client withdraws it first when it cancels
its form or leaves.

History: the REPL's commands, kept across sessions in
``$XDG_STATE_HOME/erlmcp-py/connect_history`` (``~/.local/state/…`` by default; written at
exit, 0600 as readline writes it; a directory that cannot be written is reported in one line
and the session is unharmed), and the answers typed into forms, kept for this session only
(they are the user's data); the numbered choices (Submit, Reject, Cancel…) keep none. Up
recalls from the history of the prompt on screen.

Without a terminal (stdin or stdout a pipe or a file: scripts) nothing is edited: a thread reads
whole lines (``os.read``, so a read left behind at exit holds no lock) and posts them like any
command; lines that come before their prompt wait for it. At the end of input (a pipe's end,
or Ctrl-D) every prompt is answered ``None``: the first one to meet it is shown and its line
ended, later ones are answered at once.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, Final, Protocol, TextIO, TypeVar

import trio

from erlmcp_py.connect._render import ANSWERS, COMMANDS
from erlmcp_py.core.i18n import Texts

__all__ = ["Console", "Screen", "Terminal", "history_file"]

#: Most lines each history keeps.
HISTORY_LENGTH: Final = 1000
_NOTHING: Final = object()
#: How often a ring that did not end the read is rung again.
_RING_AGAIN_S: Final = 0.02

T = TypeVar("T")


def history_file(environ: Mapping[str, str]) -> Path | None:
    """Where the REPL's commands are kept: ``$XDG_STATE_HOME/erlmcp-py/connect_history``
    (``~/.local/state`` when the variable is unset or not absolute, as the XDG base directory
    specification says); ``None`` when there is no home to put it in."""
    state = environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        try:
            state = str(Path.home() / ".local" / "state")
        except RuntimeError:  # no HOME, and no password entry to find one
            return None
    return Path(state) / "erlmcp-py" / "connect_history"


# --------------------------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ask:
    ticket: int
    prompt: str
    history: str | None


@dataclass(frozen=True, slots=True)
class _Withdraw:
    ticket: int


@dataclass(frozen=True, slots=True)
class _Write:
    text: str


@dataclass(frozen=True, slots=True)
class _Line:
    """A line read without a terminal (``None``: the input ended)."""

    text: str | None


@dataclass(frozen=True, slots=True)
class _Stop:
    pass


_Command = _Ask | _Withdraw | _Write | _Line | _Stop


@dataclass(eq=False)
class _Open:
    """A prompt someone waits for."""

    ask: _Ask
    typed: str = ""  # what was typed before a ring ended the read: typed again for the user
    shown: bool = False  # its prompt is the last thing on screen (without a terminal)
    interrupted: bool = False  # Ctrl-C ended its line: it is withdrawn, never shown again


@dataclass(frozen=True, slots=True)
class _Link:
    token: trio.lowlevel.TrioToken
    on_line: Callable[[int, str | None], object]
    on_interrupt: Callable[[], object]


class _Rung(BaseException):
    """Raised by the signal handler to end the read in progress (see the module docstring)."""


# --------------------------------------------------------------------------------------------
# The console (the main thread)
# --------------------------------------------------------------------------------------------


class Console:
    """The process's terminal, served by the main thread (see the module docstring).

    Args:
        t: The catalog in the user's locale (the one line about a history not saved).
        history: The history file; ``None``: none.
        fd: The input's file descriptor.
        out: The screen.
    """

    def __init__(
        self,
        t: Texts,
        history: Path | None,
        *,
        fd: int = 0,
        out: TextIO | None = None,
    ) -> None:
        self._t = t
        self._history_file = history
        self._fd = fd
        self._out = out if out is not None else sys.stdout
        self._readline = _readline_for(fd, self._out)
        self._commands: queue.SimpleQueue[_Command] = queue.SimpleQueue()
        self._count_lock = threading.Lock()
        self._posted = 0
        self._taken = 0
        self._bell = threading.Event()
        self._closing = False
        self._main: int | None = None
        self._link: _Link | None = None
        self._link_lock = threading.Lock()
        self._early_interrupts = 0
        self._open: list[_Open] = []
        self._ahead: deque[str] = deque()  # lines read before their prompt (no terminal)
        self._ended = False  # the input has ended
        self._end_shown = False  # a prompt met the end: later ones are answered unseen
        self._stopped = False
        self._reading: _Open | None = None
        self._ring_typed = ""
        self._ring_was_ctrl_c = False
        self._histories: dict[str | None, list[str]] = {COMMANDS: [], ANSWERS: [], None: []}
        self._loaded: object = _NOTHING  # the history readline has

    @property
    def edits(self) -> bool:
        """Whether lines are edited with readline (input and output are a terminal)."""
        return self._readline is not None

    # -- the trio side (any thread) ----------------------------------------------------------

    def attach(
        self,
        token: trio.lowlevel.TrioToken,
        on_line: Callable[[int, str | None], object],
        on_interrupt: Callable[[], object],
    ) -> None:
        """Where lines and Ctrl-C go: ``on_line(ticket, line)`` and ``on_interrupt()``, run in
        ``token``'s trio thread. A Ctrl-C that came before is delivered now."""
        with self._link_lock:
            self._link = _Link(token, on_line, on_interrupt)
            early, self._early_interrupts = self._early_interrupts, 0
        for _ in range(early):
            self._to_trio(on_interrupt)

    def ask(self, ticket: int, prompt: str, history: str | None = ANSWERS) -> None:
        """Open a prompt; its line goes to ``on_line(ticket, …)`` (see
        :meth:`~._render.Prompter.ask` for ``history``)."""
        self._post(_Ask(ticket, prompt, history))

    def withdraw(self, ticket: int) -> None:
        """Nobody waits for prompt ``ticket`` any more."""
        self._post(_Withdraw(ticket))

    def write(self, text: str) -> None:
        """Print ``text`` on lines of its own, above the open prompt."""
        self._post(_Write(text))

    def stop(self) -> None:
        """End :meth:`run`'s service of the terminal."""
        self._post(_Stop())

    def _post(self, command: _Command) -> None:
        with self._count_lock:
            self._posted += 1
            self._commands.put(command)
        self._bell.set()

    def _untaken(self) -> bool:
        return self._posted > self._taken

    # -- the main thread -----------------------------------------------------------------------

    def run(self, work: Callable[[], T]) -> T:
        """Run ``work`` (the client's ``trio.run``) in a thread while this thread serves the
        terminal, until ``work`` ends.

        Returns:
            What ``work`` returned.

        Raises:
            BaseException: what ``work`` raised.
        """
        outcome: list[tuple[bool, Any]] = []

        def target() -> None:
            try:
                outcome.append((True, work()))
            except BaseException as exc:
                outcome.append((False, exc))
            finally:
                self.stop()

        self._main = threading.get_ident()
        previous = self._install_handlers()
        self._load_history()
        worker = threading.Thread(target=target, name="erlmcp-connect-trio", daemon=True)
        worker.start()
        # with a terminal, the ringer (readline reads in this thread); without, the reader
        helper = self._ring_until_taken if self.edits else self._read_plain
        threading.Thread(target=helper, name="erlmcp-connect-console", daemon=True).start()
        try:
            self._serve()
            worker.join()
        finally:
            self._closing = True
            self._bell.set()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self._save_history()
        succeeded, value = outcome[0]
        if not succeeded:
            raise value
        return value  # type: ignore[no-any-return]

    def _install_handlers(self) -> dict[int, Any]:
        previous: dict[int, Any] = {signal.SIGINT: signal.signal(signal.SIGINT, self._on_signal)}
        if self.edits:
            previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, self._on_signal)
        return previous

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-C goes to trio; a ring, or Ctrl-C, ends a read readline is doing."""
        ctrl_c = signum == signal.SIGINT
        if ctrl_c:
            self._interrupt()
        reading = self._reading
        if reading is None or not self._in_readline() or not (ctrl_c or self._untaken()):
            return
        assert self._readline is not None
        self._ring_typed = self._readline.get_line_buffer()
        self._ring_was_ctrl_c = ctrl_c
        raise _Rung

    def _in_readline(self) -> bool:
        """Whether readline holds the terminal (its mode is not canonical: see the module
        docstring)."""
        import termios

        try:
            return not termios.tcgetattr(self._fd)[3] & termios.ICANON
        except termios.error:
            return False

    def _interrupt(self) -> None:
        with self._link_lock:
            link = self._link
            if link is None:
                self._early_interrupts += 1
                return
        self._to_trio(link.on_interrupt)

    def _to_trio(self, fn: Callable[..., object], *args: object) -> None:
        link = self._link
        if link is None:
            return
        with suppress(trio.RunFinishedError):  # the client has ended: nobody waits any more
            link.token.run_sync_soon(fn, *args)

    def _ring_until_taken(self) -> None:
        """Ring the main thread while a command waits and readline reads (see the module
        docstring)."""
        while True:
            self._bell.wait()
            if self._closing:
                return
            self._bell.clear()
            while self._untaken() and self._reading is not None and not self._closing:
                if self._main is not None:
                    signal.pthread_kill(self._main, signal.SIGUSR1)
                time.sleep(_RING_AGAIN_S)

    def _serve(self) -> None:
        while not self._stopped:
            self._take_waiting()
            if self._stopped:
                return
            top = self._open[-1] if self._open else None
            if self.edits and top is not None and not top.interrupted:
                self._edit(top)
            else:
                self._take(self._commands.get())

    def _take_waiting(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            self._take(command)

    def _take(self, command: _Command) -> None:
        with self._count_lock:
            self._taken += 1
        for entry in self._open:
            # Ctrl-C ended its line; the client withdraws it at once (a cancelled form, or
            # leaving): one that is still open after the next command is shown again.
            entry.interrupted = False
        if isinstance(command, _Ask):
            if self._open and self._open[-1].shown:
                self._end_line(self._open[-1])  # the new prompt goes below it
            self._open.append(_Open(command))
        elif isinstance(command, _Withdraw):
            for entry in self._open:
                if entry.ask.ticket == command.ticket:
                    if entry.shown:
                        self._end_line(entry)
                    self._open.remove(entry)
                    break
        elif isinstance(command, _Write):
            top = self._open[-1] if self._open else None
            if top is not None and top.shown:
                self._end_line(top)
            self._print(command.text + "\n")
        elif isinstance(command, _Line):
            if command.text is None:
                self._ended = True
            else:
                self._ahead.append(command.text)
        else:
            self._stopped = True
        self._settle()

    def _settle(self) -> None:
        """Answer what can be answered at once (a line read ahead, or the end of input) and,
        without a terminal, show the newest prompt (see the module docstring)."""
        while self._open:
            top = self._open[-1]
            if self._ahead:
                if not top.shown:
                    self._print(top.ask.prompt)
                top.shown = False
                self._answered(top, self._ahead.popleft())
            elif self._ended:
                if not self._end_shown:  # the first prompt to meet the end is seen, and ends
                    self._print(("" if top.shown else top.ask.prompt) + "\n")
                    self._end_shown = True
                top.shown = False
                self._open.pop()
                self._to_trio_line(top.ask.ticket, None)
            else:
                if not self.edits and not top.shown:
                    self._print(top.ask.prompt)
                    top.shown = True
                return

    def _print(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    def _end_line(self, entry: _Open) -> None:
        self._print("\n")
        entry.shown = False

    def _answered(self, entry: _Open, line: str) -> None:
        self._open.remove(entry)
        self._to_trio_line(entry.ask.ticket, line)

    def _to_trio_line(self, ticket: int, line: str | None) -> None:
        link = self._link
        if link is not None:
            self._to_trio(link.on_line, ticket, line)

    # -- without a terminal --------------------------------------------------------------------

    def _read_plain(self) -> None:
        """Post each line read from the input (without its line end), then ``None``."""
        buffer = b""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                if buffer:
                    self._post(_Line(buffer.decode("utf-8", "replace")))
                self._post(_Line(None))
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self._post(_Line(line.rstrip(b"\r").decode("utf-8", "replace")))

    # -- with a terminal: readline -------------------------------------------------------------

    def _edit(self, entry: _Open) -> None:
        """Read one line for ``entry`` with readline, unless a command comes first."""
        readline = self._readline
        assert readline is not None
        self._use_history(entry.ask.history)
        typed, entry.typed = entry.typed, ""
        readline.set_pre_input_hook(_typing(readline, typed) if typed else None)
        self._out.flush()
        try:
            self._reading = entry
            if self._untaken():
                entry.typed = typed
                return  # a command came: it is taken first
            line = input(entry.ask.prompt)
        except _Rung:
            entry.typed = self._ring_typed
            entry.interrupted = self._ring_was_ctrl_c
            self._print("^C\n" if self._ring_was_ctrl_c else "\n")
            return
        except EOFError:  # Ctrl-D on an empty line
            self._print("\n")
            self._ended = self._end_shown = True
            self._settle()
            return
        finally:
            self._reading = None
            readline.set_pre_input_hook(None)
        self._remember(entry.ask.history, line)
        self._answered(entry, line)

    def _use_history(self, kind: str | None) -> None:
        """Give readline the history of ``kind`` (Up recalls from it; ``None``: none)."""
        readline = self._readline
        if readline is None or kind == self._loaded:
            return
        readline.clear_history()
        for line in self._histories.setdefault(kind, []):
            readline.add_history(line)
        self._loaded = kind

    def _remember(self, kind: str | None, line: str) -> None:
        lines = self._histories.setdefault(kind, [])
        if kind is None or not line.strip() or (lines and lines[-1] == line):
            return
        lines.append(line)
        del lines[:-HISTORY_LENGTH]
        if self._readline is not None and self._loaded == kind:
            self._readline.add_history(line)

    def _load_history(self) -> None:
        readline = self._readline
        if readline is None:
            return
        readline.set_auto_history(False)
        readline.clear_history()
        self._loaded = _NOTHING
        if self._history_file is not None:
            with suppress(OSError):  # none yet, or unreadable: the session starts without
                readline.read_history_file(str(self._history_file))
        count = readline.get_current_history_length()
        lines = [readline.get_history_item(i) for i in range(1, count + 1)]
        self._histories[COMMANDS] = [line for line in lines if line][-HISTORY_LENGTH:]

    def _save_history(self) -> None:
        readline = self._readline
        path = self._history_file
        if readline is None or path is None or not self._histories[COMMANDS]:
            return
        self._loaded = _NOTHING
        self._use_history(COMMANDS)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            readline.write_history_file(str(path))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self._print(self._t("history_not_saved", path=str(path), reason=reason) + "\n")


def _typing(readline: ModuleType, text: str) -> Callable[[], None]:
    """A readline pre-input hook that types ``text`` into the line."""

    def hook() -> None:
        readline.insert_text(text)
        readline.redisplay()

    return hook


def _readline_for(fd: int, out: TextIO) -> ModuleType | None:
    """The :mod:`readline` module when lines can be edited: input and output are the process's
    terminal, and the platform has readline and the signals the console uses."""
    try:
        if fd != 0 or out is not sys.stdout or not (os.isatty(fd) and out.isatty()):
            return None
        if not hasattr(signal, "pthread_kill") or not hasattr(signal, "SIGUSR1"):
            return None
        import readline
    except (ImportError, OSError, ValueError):
        return None
    return readline


# --------------------------------------------------------------------------------------------
# The trio side
# --------------------------------------------------------------------------------------------


class Screen(Protocol):
    """What a :class:`Terminal` needs of the console (a :class:`Console`, or a test's own)."""

    def ask(self, ticket: int, prompt: str, history: str | None = ANSWERS) -> None: ...

    def withdraw(self, ticket: int) -> None: ...

    def write(self, text: str) -> None: ...


@dataclass(eq=False)
class _Slot:
    arrived: trio.Event = field(default_factory=trio.Event)
    line: str | None = None


@dataclass(eq=False)
class Terminal:
    """A :class:`~._render.Prompter` on a console, for trio code (see the module docstring).

    The console's ``on_line`` is :meth:`deliver`.
    """

    screen: Screen
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _slots: dict[int, _Slot] = field(default_factory=dict)

    async def ask(self, prompt: str, *, history: str | None = ANSWERS) -> str:
        """Show ``prompt``; the line typed. Cancelling the wait withdraws the prompt.

        Args:
            prompt: The prompt.
            history: Which history Up recalls from (see :meth:`~._render.Prompter.ask`).

        Raises:
            EOFError: the input has ended.
        """
        ticket = next(self._ids)
        slot = self._slots[ticket] = _Slot()
        self.screen.ask(ticket, prompt, history)
        try:
            await slot.arrived.wait()
        finally:
            if self._slots.pop(ticket, None) is not None and not slot.arrived.is_set():
                self.screen.withdraw(ticket)
        if slot.line is None:
            raise EOFError
        return slot.line

    def deliver(self, ticket: int, line: str | None) -> None:
        """The line typed at prompt ``ticket`` (``None``: the input ended)."""
        slot = self._slots.get(ticket)
        if slot is not None and not slot.arrived.is_set():
            slot.line = line
            slot.arrived.set()

    def say(self, text: str) -> None:
        """Print ``text`` on lines of its own (above the open prompt, if any)."""
        self.screen.write(text)

    def close_prompts(self) -> None:
        """The client is leaving: withdraw every prompt now, before anything else is printed
        (their waits end as the client's tasks are cancelled)."""
        for ticket in [t for t, slot in self._slots.items() if not slot.arrived.is_set()]:
            del self._slots[ticket]
            self.screen.withdraw(ticket)

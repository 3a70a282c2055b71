"""Permission requests of the TUI (issue 10 §1): Claude's PermissionRequest hook
(`local/permission_hook.py`) asks the session over the control socket, and the request waits in the
run's broker like a remote one, answerable by any client. The TUI shows its own dialog meanwhile,
and the user may answer there first: then nobody's answer is wanted any more, and the request is
withdrawn. There is never a timeout's deny: with no answer from a client, the dialog decides.

Withdrawn when (whichever comes first):
- the hook's connection closes (Esc in the TUI kills the hook; the control server cancels the wait);
- the tool call ends in the transcript (the user allowed it, or rejected it): the hook's payload has
  no tool_use_id, so the call is found by tool name and input among the calls the mirror saw start;
- the turn ends, or the TUI goes away (`attach`'s detach).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from happy_launcher.protocol import Envelope
from happy_launcher.protocol.events import ToolCallEndEv, ToolCallStartEv, TurnEndEv
from happy_launcher.session.permissions import PermissionBroker
from happy_launcher.session.ports import PermissionAnswer

if TYPE_CHECKING:
    from happy_launcher.session.core import Session

_MAX_CALLS = 256  # started calls remembered within a turn (a runaway turn must not grow us)


class LocalPermissions:
    """The TUI's open permission requests and the tool calls the mirror saw start."""

    def __init__(self, broker: PermissionBroker) -> None:
        self._broker = broker
        self._open: dict[str, tuple[str, dict[str, Any]]] = {}  # request id -> (tool, input)
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> (tool, input)

    def attach(self, session: Session) -> Callable[[], None]:
        """Follow `session`'s envelopes while the TUI runs; the returned detach (the TUI is gone)
        withdraws what is still open."""
        unsubscribe = session.subscribe(self)

        def detach() -> None:
            unsubscribe()
            self.withdraw_all()

        return detach

    async def ask(self, tool: str, tool_input: dict[str, Any]) -> PermissionAnswer | None:
        """Open a request and wait for the first answer; None once it is withdrawn. Cancelling
        the wait (the hook went away) withdraws it."""
        request = self._broker.open(tool, tool_input, origin="local")
        self._open[request.id] = (tool, request.input)
        try:
            return await self._broker.wait(request.id, None)
        finally:
            self._open.pop(request.id, None)

    def withdraw_all(self) -> None:
        for request_id in list(self._open):
            self._broker.withdraw(request_id)
        self._calls.clear()

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        for envelope in envelopes:
            ev = envelope.ev
            if isinstance(ev, ToolCallStartEv):
                if len(self._calls) < _MAX_CALLS:
                    self._calls[ev.call] = (ev.name, ev.args)
            elif isinstance(ev, ToolCallEndEv):
                call = self._calls.pop(ev.call, None)
                if call is not None:
                    self._call_ended(*call)
            elif isinstance(ev, TurnEndEv):
                self.withdraw_all()

    def _call_ended(self, tool: str, args: dict[str, Any]) -> None:
        """The user answered in the TUI (the tool ran, or was rejected): withdraw the oldest open
        request for the same call."""
        for request_id, (asked_tool, asked_input) in self._open.items():
            if asked_tool == tool and same_input(asked_input, args):
                self._broker.withdraw(request_id)
                return


def same_input(asked: dict[str, Any], called: dict[str, Any]) -> bool:
    """The hook's tool_input and the transcript's tool_use input name the same call: equal, or
    one holds the other (a field Claude fills in on one side only)."""
    if asked == called:
        return True
    small, large = (asked, called) if len(asked) <= len(called) else (called, asked)
    return bool(small) and all(key in large and large[key] == value for key, value in small.items())

"""The TUI's permission requests on the session side: the broker's open/wait/withdraw (no timeout's
deny), their withdrawal when the call ends or the turn ends (session/tui_permissions.py), the
controller's decisions and refusals, and the wire's `permission` request and `decision` reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.control.framing import WireError, encode, parse_request
from happy_launcher.control.wire import AskPermissionRequest, DecisionReply
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from happy_launcher.protocol.events import Event, ToolCallEndEv, ToolCallStartEv, TurnEndEv
from happy_launcher.runner.controller import SessionController
from happy_launcher.session.launcher import Run
from happy_launcher.session.permissions import PermissionBroker
from happy_launcher.session.ports import ControlRefused, Mode, PermissionAnswer, PermissionRequest
from happy_launcher.session.tui_permissions import LocalPermissions, same_input

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

BASH = {"command": "echo hi > written.txt", "description": "Write it"}


class Log:
    """A broker listener keeping what it was told."""

    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []
        self.outcomes: list[tuple[str, PermissionAnswer | None]] = []
        self.asked = anyio.Event()

    def requested(self, request: PermissionRequest) -> None:
        self.requests.append(request)
        self.asked.set()

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        self.outcomes.append((request_id, answer))


def broker() -> tuple[PermissionBroker, Log]:
    b, log = PermissionBroker(SequentialIds("p")), Log()
    b.listen(log)
    return b, log


class Calls:
    def __init__(self) -> None:
        self._make = EnvelopeFactory(SequentialIds("e"))

    def feed(self, local: LocalPermissions, *events: Event) -> None:
        local.committed([], [self._make.agent(ev, turn="t", time=1) for ev in events])


def start(call: str, args: dict[str, Any], name: str = "Bash") -> ToolCallStartEv:
    return ToolCallStartEv(call=call, name=name, title="t", description="d", args=args)


async def asking(local: LocalPermissions, tool_input: dict[str, Any], out: list[Any]) -> None:
    out.append(await local.ask("Bash", tool_input))


async def test_a_withdrawn_request_waits_no_more_and_a_late_answer_is_refused() -> None:
    b, log = broker()
    request = b.open("Bash", BASH, origin="local")
    assert b.pending == [request] and request.origin == "local"
    async with anyio.create_task_group() as tg:
        got: list[PermissionAnswer | None] = []

        async def wait() -> None:
            got.append(await b.wait(request.id, None))

        tg.start_soon(wait)
        await anyio.wait_all_tasks_blocked()
        assert b.withdraw(request.id)
    assert got == [None] and b.pending == []
    assert log.outcomes == [(request.id, None)]
    assert not b.answer(request.id, PermissionAnswer(True)) and not b.withdraw(request.id)
    assert b.settled_as(request.id) == "withdrawn"


async def test_a_cancelled_wait_withdraws_and_a_timed_out_ask_still_denies() -> None:
    b, log = broker()
    request = b.open("Bash", BASH, origin="local")
    with anyio.move_on_after(0):
        await b.wait(request.id, None)
    assert log.outcomes == [(request.id, None)] and b.pending == []
    b.timeout = 0
    denied = await b.ask("Bash", BASH)
    assert not denied.allow and "No answer" in denied.message
    assert log.outcomes[-1] == (log.requests[-1].id, denied)
    assert b.settled_as(log.requests[-1].id) == "denied"


async def test_the_call_ending_in_the_transcript_withdraws_its_request() -> None:
    b, log = broker()
    local, calls, got = LocalPermissions(b), Calls(), list[Any]()
    async with anyio.create_task_group() as tg:
        # The tool_use record is mirrored before the hook asks (the usual order)...
        calls.feed(local, start("c1", BASH), start("c2", {"command": "ls"}))
        tg.start_soon(asking, local, {**BASH}, got)
        await log.asked.wait()
        calls.feed(local, ToolCallEndEv(call="c2"))  # another call ending: not this one
        assert b.pending != []
        calls.feed(local, ToolCallEndEv(call="c1"))  # the user allowed it in the TUI
    assert got == [None] and log.outcomes == [(log.requests[0].id, None)]


async def test_an_answer_wins_and_the_turn_end_withdraws_the_rest() -> None:
    b, log = broker()
    local, calls, got = LocalPermissions(b), Calls(), list[Any]()
    async with anyio.create_task_group() as tg:
        tg.start_soon(asking, local, BASH, got)
        await log.asked.wait()
        log.asked = anyio.Event()
        tg.start_soon(asking, local, {"command": "rm x"}, got)
        await log.asked.wait()
        first = log.requests[0]
        assert b.answer(first.id, PermissionAnswer(False, "not now"))
        await anyio.wait_all_tasks_blocked()
        calls.feed(local, TurnEndEv(status="cancelled"))
    assert got == [PermissionAnswer(False, "not now"), None]
    assert [outcome for _, outcome in log.outcomes] == [PermissionAnswer(False, "not now"), None]


def test_same_input_takes_a_field_added_on_one_side() -> None:
    assert same_input(BASH, dict(BASH))
    assert same_input({"command": "ls"}, {"command": "ls", "timeout": 5})
    assert same_input({"command": "ls", "timeout": 5}, {"command": "ls"})
    assert not same_input({"command": "ls"}, {"command": "rm"})
    assert not same_input({}, {"command": "ls"})


class Front:
    def __init__(self, mode: Mode) -> None:
        self.mode, self.busy = mode, False


def controller(tmp_path: Path) -> tuple[SessionController, Run]:
    ref = Run(tmp_path / "home", tmp_path)
    c = SessionController(
        ref, mode="local", pid=1, transcript=lambda _: tmp_path / "t.jsonl", clock=lambda: 0
    )
    return c, ref


async def test_the_controller_decides_and_refuses_late_answers_clearly(tmp_path: Path) -> None:
    c, ref = controller(tmp_path)
    assert await c.ask_permission("Bash", BASH) is None  # no TUI runs: a stale hook
    ref.front = Front("local")  # type: ignore[assignment]
    got: list[PermissionAnswer | None] = []
    async with anyio.create_task_group() as tg:

        async def ask(tool_input: dict[str, Any]) -> None:
            got.append(await c.ask_permission("Bash", tool_input))

        for tool_input in (BASH, {"command": "rm x"}, {"command": "ls"}):
            tg.start_soon(ask, tool_input)
            await anyio.wait_all_tasks_blocked()
        first, second, third = c.pending_permissions()
        assert (first.origin, first.title) == ("local", "Write it")
        c.answer(first.id, True, None)
        c.answer(second.id, False, None)
        ref.local_permissions.withdraw_all()
    assert got == [PermissionAnswer(True), PermissionAnswer(False, "Denied by a happy client"), None]
    with pytest.raises(ControlRefused, match=f"permission request {third.id} was withdrawn"):
        c.answer(third.id, True, None)
    with pytest.raises(ControlRefused, match=f"permission request {first.id} was allowed already"):
        c.answer(first.id, False, None)


def test_the_wire_permission_request_takes_claudes_payload_as_is() -> None:
    payload = b'{"session_id":"s","hook_event_name":"PermissionRequest",'
    payload += b'"tool_name":"Bash","tool_input":{"command":"ls"}}'
    request = parse_request(b'{"type":"permission","id":"hook","payload":%s}' % payload)
    assert isinstance(request, AskPermissionRequest)
    assert (request.payload.tool_name, request.payload.tool_input) == ("Bash", {"command": "ls"})
    with pytest.raises(WireError, match=r"permission\.payload\.tool_name"):
        parse_request(b'{"type":"permission","id":"hook","payload":{"tool_name":"","tool_input":{}}}')
    with pytest.raises(WireError, match=r"permission\.tool_name: Extra inputs"):
        parse_request(b'{"type":"permission","id":"hook","tool_name":"Bash","payload":%s}' % payload)
    denied = DecisionReply.of("hook", PermissionAnswer(False, "not now", stop=True))
    assert encode(denied) == (
        b'{"type":"decision","id":"hook","outcome":"denied","message":"not now","interrupt":true}\n'
    )
    assert DecisionReply.of("hook", None).message is None
    assert DecisionReply.of("hook", PermissionAnswer(True, "fine", stop=True)) == DecisionReply(
        id="hook", outcome="allowed"
    )

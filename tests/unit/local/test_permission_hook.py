"""happy's PermissionRequest hook (local/permission_hook.py), run as Claude runs it (its overlay
command, through `sh`), against the real control server over a fake session: the decisions it prints,
and that it never blocks Claude when happy is gone or Claude stops listening."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.control.fake import FakeController
from happy_launcher.local import permission_hook
from happy_launcher.local.hooks import permission_hook_command
from happy_launcher.session.ports import PermissionAnswer, PermissionRequest, outcome
from tests.support.control import facts, running

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

SCRIPT = Path(permission_hook.__file__)
PAYLOAD = {
    "session_id": "c0ffee00-0000-4000-8000-000000000001",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "echo hi > written.txt", "description": "Write it"},
    "permission_suggestions": [],
}


def command(path: Path) -> list[str]:
    return ["sh", "-c", permission_hook_command(SCRIPT, path)]


class Deciding:
    """A permission watcher deciding each request as it comes, with `decide(controller, id)`."""

    def __init__(self, controller: FakeController, decide: Callable[[FakeController, str], None]) -> None:
        self.controller, self.decide = controller, decide
        self.seen: list[PermissionRequest] = []
        self.outcomes: list[tuple[str, str]] = []
        self.asked, self.done = anyio.Event(), anyio.Event()

    def requested(self, request: PermissionRequest) -> None:
        self.seen.append(request)
        self.asked.set()
        self.decide(self.controller, request.id)

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        self.outcomes.append((request_id, outcome(answer)))
        self.done.set()


@asynccontextmanager
async def deciding(
    tmp_path: Path, decide: Callable[[FakeController, str], None]
) -> AsyncIterator[tuple[Path, Deciding]]:
    controller = FakeController(facts())
    watcher = Deciding(controller, decide)
    controller.watch_permissions(watcher)
    async with running(controller, tmp_path) as path:
        yield path, watcher


async def run_hook(path: Path, payload: Any = PAYLOAD) -> tuple[int, bytes]:
    done = await anyio.run_process(command(path), input=json.dumps(payload).encode(), check=False)
    return done.returncode, done.stdout


def output(decision: dict[str, Any]) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


async def test_an_allow_from_a_client_is_the_hooks_decision(tmp_path: Path) -> None:
    async with deciding(tmp_path, lambda c, rid: c.answer(rid, True, None)) as (path, watcher):
        code, out = await run_hook(path)
    assert (code, json.loads(out)) == (0, output({"behavior": "allow"}))
    request = watcher.seen[0]
    assert (request.tool, request.input, request.origin) == ("Bash", PAYLOAD["tool_input"], "local")


async def test_a_deny_carries_the_clients_message(tmp_path: Path) -> None:
    async with deciding(tmp_path, lambda c, rid: c.answer(rid, False, "not now")) as (path, _):
        code, out = await run_hook(path)
    assert (code, json.loads(out)) == (0, output({"behavior": "deny", "message": "not now"}))


async def test_a_withdrawn_request_prints_nothing(tmp_path: Path) -> None:
    async with deciding(tmp_path, lambda c, rid: c.settle(rid, None)) as (path, _):
        assert await run_hook(path) == (0, b"")


@pytest.mark.parametrize("payload", [[], {"tool_name": "Bash"}, {"tool_name": "", "tool_input": {}}, "x"])
async def test_a_payload_that_is_not_a_request_asks_nothing(tmp_path: Path, payload: Any) -> None:
    async with deciding(tmp_path, lambda c, rid: c.answer(rid, True, None)) as (path, watcher):
        assert await run_hook(path, payload) == (0, b"")
    assert watcher.seen == []


async def test_no_socket_exits_at_once_with_no_decision(tmp_path: Path) -> None:
    assert await run_hook(tmp_path / "control" / "4242.sock") == (0, b"")
    plain = tmp_path / "plain"
    plain.write_text("not a socket")
    assert await run_hook(plain) == (0, b"")


async def test_happy_closing_the_socket_mid_wait_ends_the_hook(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        async with anyio.create_task_group() as tg:
            result: list[tuple[int, bytes]] = []

            async def hook() -> None:
                result.append(await run_hook(path))

            tg.start_soon(hook)
            conn, _ = await anyio.to_thread.run_sync(server.accept)
            with conn:
                request = await anyio.to_thread.run_sync(conn.recv, 65536)  # then happy dies
        assert json.loads(request)["type"] == "permission"
    assert result == [(0, b"")]


async def test_claude_closing_its_end_ends_the_hook_and_withdraws(tmp_path: Path) -> None:
    async with deciding(tmp_path, lambda c, rid: None) as (path, watcher):
        proc = await anyio.to_thread.run_sync(
            lambda: subprocess.Popen(command(path), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(PAYLOAD).encode())
        proc.stdin.close()
        await watcher.asked.wait()  # the request is pending: now Claude stops listening
        proc.stdout.close()
        assert await anyio.to_thread.run_sync(proc.wait, 10) == 0
        await watcher.done.wait()  # the hook's connection closed: withdrawn
    assert watcher.outcomes == [(watcher.seen[0].id, "withdrawn")]


async def test_a_socket_path_over_the_address_limit_is_reached(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    async with deciding(deep, lambda c, rid: c.answer(rid, True, None)) as (path, _):
        assert len(os.fsencode(path)) > 107
        _, out = await run_hook(path)
    assert json.loads(out) == output({"behavior": "allow"})


async def test_a_huge_input_is_cut_to_fit_a_request(tmp_path: Path) -> None:
    content = "x" * (2 << 20)
    payload = {**PAYLOAD, "tool_name": "Write", "tool_input": {"file_path": "/p/big.txt", "content": content}}
    async with deciding(tmp_path, lambda c, rid: c.answer(rid, True, None)) as (path, watcher):
        _, out = await run_hook(path, payload)
    assert json.loads(out) == output({"behavior": "allow"})
    shown = watcher.seen[0].input
    assert shown["file_path"] == "/p/big.txt"
    assert shown["content"].startswith("x" * 4096) and shown["content"].endswith("more characters]")


def test_the_hook_imports_nothing_of_happy() -> None:
    probe = f"import runpy, sys; runpy.run_path({str(SCRIPT)!r}); print(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    assert "happy_launcher" not in done.stdout and "pydantic" not in done.stdout
    guard, run = permission_hook_command(SCRIPT, Path("/s")).split("; ")
    assert shlex.split(guard) == ["test", "-f", str(SCRIPT), "||", "exit", "0"]
    assert shlex.split(run)[:4] == ["exec", sys.executable, "-S", "-I"]

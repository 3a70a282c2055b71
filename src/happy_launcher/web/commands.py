"""The page's commands (send, answer, switch, abort), each carrying an id of the page's choosing
so that a retry never acts twice. `send` is idempotent in the session itself (the id becomes the
control protocol's message id). The others are answered from a memory of recent ids, kept in
`HAPPY_HOME_DIR/web/commands.json` so that it outlives a restart of the server (an abort retried
after one must not end a later turn): a retry gets the first attempt's answer, and one that
arrives while the first is still running waits for it."""

from __future__ import annotations

import logging
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from happy_launcher.control.client import ControlClient
from happy_launcher.control.verbs import running
from happy_launcher.control.views import SessionView
from happy_launcher.errors import (
    ControlError,
    HappyError,
    MessageTooLargeError,
    NoSuchSessionError,
    RequestRefusedError,
    SessionEndedError,
)
from happy_launcher.home.files import write_private

_log = logging.getLogger(__name__)

REMEMBERED = 1000  # command ids kept for retries
ClientId = Annotated[str, Field(min_length=1, max_length=120)]


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: ClientId


class Send(_Command):
    type: Literal["send"]
    text: Annotated[str, Field(min_length=1)]  # at most 1 MiB: the control client says so


class Answer(_Command):
    type: Literal["answer"]
    request_id: Annotated[str, Field(min_length=1, max_length=200)]
    allow: bool
    message: Annotated[str | None, Field(max_length=4000)] = None


class Switch(_Command):
    type: Literal["switch"]
    to: Literal["local", "remote"]


class Abort(_Command):
    type: Literal["abort"]


Command = Annotated[Send | Answer | Switch | Abort, Field(discriminator="type")]
_parse = TypeAdapter(Command)
Result = tuple[int, dict[str, Any]]  # HTTP status, JSON body


def parse(body: bytes) -> Send | Answer | Switch | Abort | str:
    """The command, or what is wrong with it (one line)."""
    try:
        return _parse.validate_json(body)
    except ValidationError as exc:
        return first_error("bad command", exc)


def first_error(what: str, exc: ValidationError) -> str:
    """The first thing wrong with a request body, in one line."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{what}: {where}: {first['msg']}" if where else f"{what}: {first['msg']}"


class Commands:
    """`path`: where the memory is kept across restarts (None: in memory only)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._done: OrderedDict[tuple[str, str, str], Result] = OrderedDict()
        self._running: dict[tuple[str, str, str], anyio.Event] = {}
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            rows = orjson.loads(path.read_bytes())
            for device, session, command_id, status, body in rows[-REMEMBERED:]:
                self._done[(device, session, command_id)] = (int(status), dict(body))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError) as exc:  # only retries across the restart weaken
            _log.warning("%s is unreadable (%s): commands retried from before are not recognised", path, exc)

    def _save(self) -> None:
        if self._path is None:
            return
        rows = [[*key, status, body] for key, (status, body) in self._done.items()]
        try:
            write_private(self._path, orjson.dumps(rows))
        except OSError as exc:  # a full disk must not fail the command itself
            _log.warning("could not keep the command ids in %s: %s", self._path, exc)

    async def run(self, device: str, view: SessionView, command: Send | Answer | Switch | Abort) -> Result:
        key = (device, view.happy_id or "", command.id)
        while key in self._running:
            await self._running[key].wait()
        if key in self._done:
            return self._done[key]
        self._running[key] = anyio.Event()
        try:
            result = await _perform(device, view, command)
            if result[0] < 500:  # a failure may be retried for real
                self._done[key] = result
                while len(self._done) > REMEMBERED:
                    self._done.popitem(last=False)
                self._save()
            return result
        finally:
            self._running.pop(key).set()


# The project's errors (the control client's mapping of the socket's), as HTTP statuses.
_STATUS: tuple[tuple[type[HappyError], int], ...] = (
    (MessageTooLargeError, 413),
    (RequestRefusedError, 409),
    (SessionEndedError, 410),
    (NoSuchSessionError, 404),
    (ControlError, 502),
)


async def _perform(device: str, view: SessionView, command: Send | Answer | Switch | Abort) -> Result:
    try:
        async with running(view) as client:
            return 200, await _apply(device, client, command)
    except HappyError as exc:
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), None)
        if status is None:
            raise
        return status, {"error": str(exc)}


async def _apply(
    device: str, client: ControlClient, command: Send | Answer | Switch | Abort
) -> dict[str, Any]:
    if isinstance(command, Send):
        accepted = await client.send(f"web-{device}-{command.id}", command.text)
        return {"ok": True, "message_seq": accepted.message_seq, "duplicate": accepted.duplicate}
    if isinstance(command, Answer):
        await client.answer(command.request_id, command.allow, command.message or None)
    elif isinstance(command, Switch):
        await client.switch(command.to)
    else:
        await client.abort()
    return {"ok": True}

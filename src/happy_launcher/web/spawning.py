"""New sessions and resumed ones from the page, through the spawner the daemon uses
(spawn/spawner.py), in this server's process: what the form offers (the allowed directories, from
spawn/dirs.py's settings), a start, and a resume of an ended session. A refusal is one line of
text for the page to show."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Annotated, Literal, Protocol, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from happy_launcher.errors import NoSuchSessionError
from happy_launcher.session.ports import MAX_MESSAGE
from happy_launcher.spawn.dirs import SpawnRefused, read_settings
from happy_launcher.spawn.spawner import NeedsCreation, SpawnRequest, Started
from happy_launcher.web.commands import first_error

# The modes the form offers (Claude's own names); the spawner passes them on.
PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
Result = tuple[int, dict[str, object]]  # HTTP status, JSON body
_M = TypeVar("_M", bound=BaseModel)


class Starter(Protocol):
    """What the page needs of spawn/spawner.py's Spawner (a fake beside it in the tests)."""

    async def start(self, request: SpawnRequest) -> Started: ...

    async def resume(
        self, session_id: str, *, model: str | None = None, permission_mode: str | None = None
    ) -> Started: ...


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Annotated[str | None, Field(max_length=200)] = None
    permission_mode: PermissionMode | None = None


class NewSession(Options):
    directory: Annotated[str, Field(min_length=1, max_length=4096)]
    prompt: Annotated[str | None, Field(max_length=MAX_MESSAGE)] = None


def parse_new(body: bytes) -> NewSession | str:
    return _parse(NewSession, body)


def parse_options(body: bytes) -> Options | str:
    return _parse(Options, body or b"{}")


def _parse(model: type[_M], body: bytes) -> _M | str:
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        return first_error("bad request", exc)


async def choices(home: Path, user_home: Path) -> dict[str, object]:
    """The directories a session may start in, and the one the form shows first: the home
    directory when it is allowed, else the first allowed one."""
    settings = await anyio.to_thread.run_sync(read_settings, home, user_home)
    allowed: Sequence[Path] = settings.allowed
    default = user_home if user_home in allowed else allowed[0]
    return {"directories": [str(d) for d in allowed], "default": str(default), "limit": settings.limit}


async def start(starter: Starter, new: NewSession) -> Result:
    request = SpawnRequest(
        directory=new.directory,
        prompt=new.prompt or None,
        model=new.model or None,
        permission_mode=new.permission_mode,
    )
    return await _started(starter.start(request))


async def resume(starter: Starter, session_id: str, options: Options) -> Result:
    return await _started(
        starter.resume(session_id, model=options.model or None, permission_mode=options.permission_mode)
    )


async def _started(call: Awaitable[Started]) -> Result:
    try:
        started = await call
    except SpawnRefused as refused:
        return 409, {"error": str(refused)}
    except NeedsCreation as missing:
        return 409, {"error": f"no such directory: {missing.directory}"}
    except NoSuchSessionError as unknown:
        return 404, {"error": str(unknown)}
    return 200, {"id": started.session_id}

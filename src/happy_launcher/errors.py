"""One error hierarchy. Every message says what to do about it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class HappyError(Exception):
    """Base of every error happy reports to the user (one line, exit code `exit_code`)."""

    exit_code = 1


class UsageError(HappyError):
    """Bad command line or input file."""

    exit_code = 2


class MessageTooLargeError(UsageError):
    """A message to send is over the limit (`control_types.MAX_MESSAGE`)."""


class InputFileError(UsageError):
    """A file named on the command line is missing or unreadable."""


class OutputError(HappyError):
    """Our output (stdout, or a file it is redirected to) cannot be written: disk full, I/O error."""


class ClaudeNotFoundError(HappyError):
    """No Claude Code binary could be found."""

    exit_code = 2


class StoreError(HappyError):
    """The session store under HAPPY_HOME_DIR could not be opened or written."""


class StoreFullError(StoreError):
    """The disk (or the database's size limit) is full. Retrying after space is freed works."""


class StoreConflictError(StoreError):
    """A write contradicts the store (duplicate id, unknown session). Retrying cannot help."""


class ClaudeLaunchError(HappyError):
    """Claude could not be started."""


class SessionBusyError(HappyError):
    """Another live Claude process holds the Claude session id: a second front end would fork its
    transcript without a word (switching-facts §6)."""

    def __init__(self, session_id: str, pid: int, cwd: str | None = None) -> None:
        self.session_id, self.pid, self.cwd = session_id, pid, cwd
        where = f" (pid {pid}, in {cwd})" if cwd else f" (pid {pid})"
        super().__init__(
            f"Claude session {session_id} is already open in another claude process{where}: "
            "close it first, or continue the session there"
        )


class ControlError(HappyError):
    """A control verb (`happy send`, `watch`, …) could not reach or use a running session."""


class NoSuchSessionError(ControlError):
    """No session matches what was named (or none is running, when none was named)."""


class AmbiguousSessionError(ControlError):
    """What was named matches several sessions (or several are running, when none was named)."""


class SessionEndedError(ControlError):
    """The session has ended (its launcher is gone): it takes no more requests."""


class RequestRefusedError(ControlError):
    """The session answered a request with an error (its message says why)."""


class ControlProtocolError(ControlError):
    """The other end of a control socket does not speak happy's control protocol."""


class RemoteError(HappyError):
    """Remote mode could not drive Claude."""


class ClaudeRefusedError(UsageError):
    """Claude exited before the session started: it refused its command line (a flag happy passed
    on verbatim, a bad value), in its own words."""


def unwrap(error: BaseException) -> BaseException:
    """What a task group's ExceptionGroup stands for, where it reaches the user (CLI, API): its
    only exception, or the first of several HappyErrors (depth first). A mix with anything else
    stays a group: a bug's traceback is not hidden behind a one-line error."""
    if not isinstance(error, BaseExceptionGroup):
        return error
    leaves = list(_leaves(error))
    if len(leaves) == 1 or all(isinstance(leaf, HappyError) for leaf in leaves):
        return leaves[0]
    return error


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for inner in group.exceptions:
        if isinstance(inner, BaseExceptionGroup):
            yield from _leaves(inner)
        else:
            yield inner


@contextmanager
def unwrapped() -> Iterator[None]:
    """Raise what a task group's ExceptionGroup stands for (see `unwrap`) instead of the group."""
    try:
        yield
    except BaseExceptionGroup as group:
        inner = unwrap(group)
        if inner is group:
            raise
        raise inner from None


class HappyServerError(HappyError):
    """Happy's server (the relay to the Happy app) could not be reached, or refused a request."""

    exit_code = 3


class HappyUnauthorizedError(HappyServerError):
    """Happy's server refused the credentials (HTTP 401): expired or revoked; log in again."""


class PairingError(HappyError):
    """`happy auth login` ended without credentials: not approved in time, or an answer that does
    not open with this terminal's key."""


class CredentialsError(HappyError):
    """access.key or settings.json under HAPPY_HOME_DIR cannot be read or written."""


class DecryptError(HappyError):
    """A payload does not open with the key at hand: wrong key, wrong variant, or damaged."""


class DaemonError(HappyError):
    """The bridge (`happy daemon`) cannot start: not logged in, or it died at start (its log says why)."""

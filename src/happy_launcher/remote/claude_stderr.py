"""Claude's stderr under the Agent SDK, and Claude's failure told in one line.

The SDK pipes Claude's stderr to a callback (`ClaudeAgentOptions.stderr`). Until the session has
started, the lines are held: a Claude that refuses to start (a flag carried verbatim that it does
not know, a bad value) is then reported in one line of happy's, quoting Claude, instead of its
own lines followed by the SDK's exception. Once started, each line is passed on as Claude wrote it.
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from collections.abc import Callable

from claude_agent_sdk import ClaudeSDKError, ProcessError

from happy_launcher.errors import ClaudeRefusedError, HappyError, RemoteError, unwrap

_log = logging.getLogger(__name__)
HELD_LINES = 20  # what is quoted of a refusal: commander's is one line, a config error a few
QUOTED_CHARS = 400


class ClaudeStderr:
    def __init__(self, write: Callable[[str], object] | None = None) -> None:
        self._write = write or _to_stderr
        self._held: deque[str] = deque(maxlen=HELD_LINES)
        self._started = False

    def line(self, line: str) -> None:
        """The SDK's callback: one line Claude wrote on stderr."""
        _log.info("claude stderr: %s", line)
        if self._started:
            self._write(line + "\n")
        else:
            self._held.append(line)

    def started(self) -> None:
        """The session has started: what Claude said meanwhile is passed on, and what follows."""
        self._started = True
        while self._held:
            self._write(self._held.popleft() + "\n")

    def failure(self, error: BaseException) -> HappyError | None:
        """`error` (from the SDK, perhaps in task groups) as happy's one-line error; None when it
        is not Claude failing (not the SDK's error)."""
        sdk = unwrap(error)
        if not isinstance(sdk, ClaudeSDKError):
            return None
        exit_code = sdk.exit_code if isinstance(sdk, ProcessError) else None
        code = "" if exit_code is None else f" (exit code {exit_code})"
        if self._started:
            return RemoteError(f"Claude stopped{code}: {_first_line(sdk)}")
        said = "; ".join(line.strip() for line in self._held if line.strip())[:QUOTED_CHARS]
        return ClaudeRefusedError(f"Claude refused to start{code}: {said or _first_line(sdk)}")


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()

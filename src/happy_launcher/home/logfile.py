"""happy's log file, `happy.log` in HAPPY_HOME_DIR: never the terminal, which is Claude's."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

LOG_FILE = "happy.log"


def log_to(home: Path, name: str = LOG_FILE) -> None:
    """Send happy's log records to `<home>/<name>` (0600: it can quote the conversation).
    A log that cannot be opened is skipped: logging must never stop a session."""
    try:
        fd = os.open(home / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o600)  # an older happy created it 0644
    handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("happy_launcher")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    # The SDK's own errors too: else Python prints them on the terminal, which is Claude's (or
    # happy's one-line error's).
    logging.getLogger("claude_agent_sdk").addHandler(handler)

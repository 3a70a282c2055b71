from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """A run started in the background of a shell without job control (`scripts/test &`) ignores
    SIGINT and SIGQUIT, and every process a test starts would inherit that: the tests of Ctrl-C
    need the disposition a terminal gives. Restored in each process that runs tests."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

"""Remote mode as the controller sees it: the SDK-driven session, which hands over to the TUI
when asked (the remote screen then closes, and the launcher returns `switch`), delivers
messages other clients sent, and answers permission requests from any client."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from happy_launcher.session.ports import ControlRefused, Mode

if TYPE_CHECKING:
    from happy_launcher.remote.remote_session import RemoteSession


class RemoteFront:
    """`can_switch`: a terminal is there to run the TUI in. `close_screen`: ends the remote
    screen (set once it runs)."""

    def __init__(self, remote: RemoteSession, *, can_switch: bool) -> None:
        self._remote = remote
        self._can_switch = can_switch
        self.close_screen: anyio.Event = anyio.Event()
        self.switch_requested = False
        self.inbox = anyio.Event()  # set when a message for Claude was stored

    @property
    def mode(self) -> Mode:
        return "remote"

    @property
    def busy(self) -> bool:
        return self._remote.busy

    def check_inbound(self) -> None:
        pass  # taken: sent once the running turn ends

    def request_switch(self) -> None:
        if not self._can_switch:
            raise ControlRefused(
                "this happy runs without a terminal, so there is no TUI to switch to: "
                "run `happy claude --resume <id>` in a terminal instead"
            )
        self.switch_requested = True
        self.close_screen.set()

    async def abort(self) -> None:
        await self._remote.interrupt()

    def inbound(self) -> None:
        self.inbox.set()

"""The terminal's remote screen driven by a remote session: envelopes as they are committed,
partial text, permission prompts in; prompts, interrupts and answers out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import anyio

from happy_launcher.claude.sdk_items import Partial
from happy_launcher.protocol import Envelope
from happy_launcher.remote.remote_session import RemoteSession
from happy_launcher.remote.screen import RemoteScreen
from happy_launcher.remote.screen_types import ScreenEnd, StatusInfo
from happy_launcher.session.ports import PermissionAnswer, PermissionRequest
from happy_launcher.terminal.guard import SignalReceiver

DENIED_HERE = "Denied in happy's terminal"


class ScreenLink:
    """Connects one `RemoteScreen` to one `RemoteSession` (both ways)."""

    def __init__(
        self,
        remote: RemoteSession,
        *,
        model: str | None,
        stdin_fd: int,
        stdout_fd: int,
        signals: SignalReceiver = anyio.open_signal_receiver,
    ) -> None:
        self._remote = remote
        self._status = StatusInfo(remote.happy_session_id, remote.claude_session_id, model)
        self.screen = RemoteScreen(
            self, status=self._status, stdin_fd=stdin_fd, stdout_fd=stdout_fd, signals=signals
        )

    # --- what the screen asks (ScreenActions) -----------------------------------------------

    async def send(self, text: str) -> None:
        await self._remote.submit(text)

    async def interrupt(self) -> None:
        await self._remote.interrupt()

    async def answer_permission(self, request_id: str, allow: bool, *, stop: bool = False) -> None:
        self._remote.answer(request_id, PermissionAnswer(allow, "" if allow else DENIED_HERE, stop=stop))

    # --- what the session tells ---------------------------------------------------------------

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        model = self._remote.model  # a message may have set another (applied before its prompt)
        if model is not None and model != self._status.model:
            self._status = replace(self._status, model=model)
            self.screen.set_status(self._status)
        self.screen.on_envelopes(envelopes)

    def partial(self, partial: Partial) -> None:
        if not partial.thinking:
            self.screen.on_partial(partial.text)

    def requested(self, request: PermissionRequest) -> None:
        self.screen.on_permission(request)

    def settled(self, request_id: str, answer: PermissionAnswer | None) -> None:
        self.screen.on_permission_done(request_id)

    async def run(self, prompt: str | None, *, close: anyio.Event | None = None) -> ScreenEnd:
        """Show the session until the user leaves, or `close` is set (`ScreenEnd("closed")`);
        `prompt` is sent first."""
        unsubscribe = self._remote.subscribe(self)
        unlisten = self._remote.permissions.listen(self)
        try:
            async with anyio.create_task_group() as tg:
                if close is not None:
                    tg.start_soon(self._close_on, close)
                if prompt is not None:
                    await self._remote.submit(prompt)
                end = await self.screen.run()
                tg.cancel_scope.cancel()
            return end
        finally:
            unlisten()
            unsubscribe()

    async def _close_on(self, close: anyio.Event) -> None:
        await close.wait()
        self.screen.close()

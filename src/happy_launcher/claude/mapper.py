"""Claude transcript records -> session-protocol envelopes (seed 000, design §2).

Sans-IO and deterministic: ids come from an injected factory and every call takes the time of
the envelopes it makes, so the same records always give the same stream. All state lives in a
`MapperState`, which the session keeps across launcher restarts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from happy_launcher.claude.mapper_state import MAX_SENT_PROMPTS, MapperState, OrphanLimits, Subagent
from happy_launcher.claude.records import (
    INTERRUPT_TEXTS,
    LOCAL_COMMAND_PREFIXES,
    SYNTHETIC,
    SYNTHETIC_SUBAGENT_PROMPT,
    UNKNOWN,
    Record,
    is_task_notification,
    notification_ids,
    text_of,
)
from happy_launcher.claude.titles import SUBAGENT_TOOLS, subagent_title, tool_title
from happy_launcher.claude.tool_outcome import denied_call, tool_status
from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    Event,
    IdFactory,
    ServiceEv,
    StartEv,
    StopEv,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    TurnEndEv,
    TurnStartEv,
    TurnStatus,
    subagent_id,
)

Out = list[Envelope]
_Handler = Callable[[Record, int, Out], None]


class Mapper:
    """Maps one session's records, in arrival order, to envelopes. Owns the open turn, the
    subagents (provider tool id -> session subagent id), the orphan buffer and the skip counters,
    all in `state`; the caller owns reading, timing and writing."""

    def __init__(
        self, ids: IdFactory, state: MapperState | None = None, limits: OrphanLimits | None = None
    ) -> None:
        self._new_id = ids
        self._make = EnvelopeFactory(ids)
        self.state = state if state is not None else MapperState()
        self._limits = limits if limits is not None else OrphanLimits()
        self._handlers: dict[str, _Handler] = {
            "user": self._user,
            "assistant": self._assistant,
            "system": self._system,
            "attachment": self._attachment,
        }

    # -- public API -------------------------------------------------------------------------

    def feed(self, record: Record, now: int) -> list[Envelope]:
        """Map one record; `now` is the time of the envelopes made (Unix ms)."""
        out: Out = []
        self._dispatch(record, now, out)
        return out

    def close_turn(self, status: TurnStatus, now: int) -> list[Envelope]:
        """End the session's activity: stop every active subagent, then end the open turn."""
        out: Out = []
        for tool_id in self.state.active_subagents():
            self._stop(tool_id, now, out)
        self._end_turn(status, now, out)
        return out

    def prompt_sent(self, text: str, now: int, uuid: str | None = None) -> list[Envelope]:
        """Remote mode sent Claude a prompt, which the SDK does not echo (design §4): the user's
        text and the turn start now, as the prompt's transcript record would make them (ending
        the open turn first). That record, when the transcript tail brings it, must map to
        nothing: sent with a `uuid`, Claude writes it under that uuid, which the caller marks
        processed; sent without, its text is remembered and its copy skipped here."""
        out: Out = []
        self._end_turn("completed", now, out)
        if text:
            out.append(self._make.user_text(text, now, claude_uuid=uuid))
            if uuid is None:
                sent = self.state.sent_prompts
                sent.append(text)
                del sent[:-MAX_SENT_PROMPTS]
        self._start_turn(now, out)
        self.state.turn_prompt = uuid
        return out

    def end_turn(
        self,
        status: TurnStatus,
        now: int,
        service: str | None = None,
        *,
        taken: Collection[str] | None = None,
    ) -> list[Envelope]:
        """A turn's result (remote mode: the SDK's ResultMessage) ends the open turn; `service`
        says why a failed one failed. Nothing when no turn is open: an api-error record has
        already closed it `failed`, with its own service text. `taken`: for a turn Claude began
        itself (a background task's notification), the uuids of the prompts it took in: the
        open turn of a prompt sent meanwhile is not its turn unless it took that prompt in.
        Unlike `close_turn`, subagents are not stopped: background ones outlive the turn."""
        out: Out = []
        prompt = self.state.turn_prompt
        if taken is not None and prompt is not None and prompt not in taken:
            return out
        if self.state.turn is not None:
            if status == "failed" and service:
                self._agent(out, ServiceEv(text=service), now, None, None)
            self._end_turn(status, now, out)
        return out

    def notice(self, text: str, now: int) -> list[Envelope]:
        """A service note of happy's own (a broken chain after a switch): in the open turn, else
        in a turn of its own."""
        out: Out = []
        alone = self.state.turn is None
        self._agent(out, ServiceEv(text=text), now, None, None)
        if alone:
            self._end_turn("completed", now, out)
        return out

    def finish(self, now: int) -> list[Envelope]:
        """End of a finished transcript (replay): close what is still open (design §2)."""
        status: TurnStatus = "completed" if self.state.last_stop_reason == "end_turn" else "cancelled"
        return self.close_turn(status, now)

    @property
    def turn_open(self) -> bool:
        return self.state.turn is not None

    # -- dispatch ---------------------------------------------------------------------------

    def _dispatch(self, record: Record, now: int, out: Out) -> None:
        handler = self._handlers.get(record.kind)
        if handler is not None:
            handler(record, now, out)
        elif record.kind == UNKNOWN:
            self.state.stats.unknown_kinds[record.type or "<no type>"] += 1

    def _user(self, record: Record, now: int, out: Out) -> None:
        if record.data.get("isMeta") is True or record.data.get("isCompactSummary") is True:
            return  # not user input (design §2): Claude's own notes, the summary `/compact` wrote
        if is_task_notification(record):
            self._task_notification(record, now, out)
            return
        held, sub = self._routed(record, now, out)
        if held:
            return
        content = record.content
        subagent = sub.session_id if sub is not None else None
        if isinstance(content, list) and any(_is_block(b, "tool_result") for b in content):
            self._tool_results(record, content, subagent, now, out)
        elif sub is not None or record.is_sidechain:
            self._sidechain_prompt(record, sub, now, out)
        else:
            self._prompt(record, now, out)

    def _assistant(self, record: Record, now: int, out: Out) -> None:
        held, sub = self._routed(record, now, out)
        if held:
            return
        subagent = sub.session_id if sub is not None else None
        if record.data.get("isApiErrorMessage") is True:
            text = text_of(record.content) or "API error"
            self._agent(out, ServiceEv(text=text), now, subagent, record.uuid)
            if subagent is None and not record.is_sidechain:
                self._end_turn("failed", now, out)
            return
        if record.message.get("model") == "<synthetic>":
            # A resume's repair of an interrupted turn ("No response requested."): Claude's
            # bookkeeping, which the TUI does not show either (design §2).
            self.state.stats.ignored_blocks["synthetic reply"] += 1
            return
        content = record.content
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        last_content = -1
        for block in blocks:
            if self._assistant_block(block, record, subagent, now, out):
                last_content = len(out) - 1
        if subagent is None and not record.is_sidechain:  # after the blocks: they may open a turn
            stop_reason = record.message.get("stop_reason")
            if isinstance(stop_reason, str):
                self.state.last_stop_reason = stop_reason
        usage = record.message.get("usage")
        if last_content >= 0 and isinstance(usage, dict) and self.state.first_usage_of(record):
            # Optional fields are omitted, never null (design §1): Claude writes e.g.
            # `"service_tier": null` (`<synthetic>` replies), `"fallback_credit": null`.
            usage = {key: value for key, value in usage.items() if value is not None}
            out[last_content] = self._make.with_usage(out[last_content], usage)

    def _assistant_block(self, block: Any, record: Record, subagent: str | None, now: int, out: Out) -> bool:
        """Map one content block; True when it made a content envelope (the usage carrier)."""
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" or kind == "thinking":
            text = block.get(kind)
            if not isinstance(text, str) or not text:
                return False
            text_ev = TextEv(text=text, thinking=True) if kind == "thinking" else TextEv(text=text)
            self._agent(out, text_ev, now, subagent, record.uuid)
            return True
        if kind == "tool_use":
            call, name, args = block.get("id"), block.get("name"), block.get("input")
            args = args if isinstance(args, dict) else {}
            if not isinstance(call, str) or not call or not isinstance(name, str) or not name:
                self.state.stats.ignored_blocks["tool_use without id or name"] += 1
                return False
            if name in SUBAGENT_TOOLS:
                self._spawn(call, args, now, out, record.uuid)
                return False
            title, description = tool_title(name, args)
            ev = ToolCallStartEv(call=call, name=name, title=title, description=description, args=args)
            self.state.open_calls.add(call)
            self._agent(out, ev, now, subagent, record.uuid)
            return True
        self.state.stats.ignored_blocks[str(kind)] += 1
        return False

    def _system(self, record: Record, now: int, out: Out) -> None:
        # The TUI writes one `turn_duration` per finished turn: the in-band turn end (design §2).
        if record.data.get("subtype") == "turn_duration" and not record.is_sidechain:
            self._end_turn("completed", now, out)

    # -- user record variants ---------------------------------------------------------------

    def _prompt(self, record: Record, now: int, out: Out) -> None:
        content = record.content
        text = text_of(content)
        stripped = text.strip()
        if stripped in INTERRUPT_TEXTS:
            self._end_turn("cancelled", now, out)
            return
        if stripped.startswith(LOCAL_COMMAND_PREFIXES):
            self.state.stats.ignored_blocks["local command"] += 1
            return
        if self.state.take_sent_prompt(text):
            return  # the transcript's copy of a prompt remote mode sent: already shown
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") != "text":
                    self.state.stats.ignored_blocks[f"user {block.get('type')}"] += 1
        self._end_turn("completed", now, out)
        if text:
            out.append(self._make.user_text(text, now, claude_uuid=record.uuid))
        self._start_turn(now, out)  # Claude has taken the prompt: its turn starts now, not with its reply

    def _sidechain_prompt(self, record: Record, sub: Subagent | None, now: int, out: Out) -> None:
        # A subagent's opening prompt is shown as agent text of that subagent (design §2).
        text = text_of(record.content)
        if not text or text.strip() in INTERRUPT_TEXTS:
            return
        synthetic = record.data.get(SYNTHETIC) == SYNTHETIC_SUBAGENT_PROMPT
        if sub is not None and not sub.shows_prompt(text, synthetic):
            return
        self._agent(out, TextEv(text=text), now, sub.session_id if sub is not None else None, record.uuid)

    def _tool_results(
        self, record: Record, content: list[Any], subagent: str | None, now: int, out: Out
    ) -> None:
        state = self.state
        for block in content:
            if _is_block(block, "text") and block.get("text", "").strip() in INTERRUPT_TEXTS:
                if subagent is None and not record.is_sidechain:
                    self._end_turn("cancelled", now, out)
                continue
            if not _is_block(block, "tool_result"):
                continue
            call = block.get("tool_use_id")
            if isinstance(call, str) and call in state.subagents:
                self._subagent_result(call, record, now, out)
            elif isinstance(call, str) and call in state.open_calls:
                state.open_calls.discard(call)
                denied = call in state.denied_calls
                state.denied_calls.discard(call)
                status = tool_status(block, record, denied=denied)
                self._agent(out, ToolCallEndEv(call=call, status=status), now, subagent, record.uuid)
            else:
                state.stats.unmatched_tool_results += 1

    def _attachment(self, record: Record, now: int, out: Out) -> None:
        # Emits nothing (design §2); a hook's denial is kept for its call's end.
        call = denied_call(record)
        if call is not None and call in self.state.open_calls:
            self.state.denied_calls.add(call)

    def _task_notification(self, record: Record, now: int, out: Out) -> None:
        # A background agent finished: stop it; this is not a user prompt (design §2).
        tool_use_id, agent_id = notification_ids(record)
        tool_id = tool_use_id if tool_use_id in self.state.subagents else None
        if tool_id is None and agent_id is not None:
            tool_id = self.state.agent_ids.get(agent_id)
        if tool_id is not None:
            self._stop(tool_id, now, out)

    # -- subagents --------------------------------------------------------------------------

    def _routed(self, record: Record, now: int, out: Out) -> tuple[bool, Subagent | None]:
        held, sub = self.state.route(record, self._limits)
        if sub is not None and self.state.turn is not None and self.state.last_stop_reason == "end_turn":
            # The main chain's last reply ended its turn: a subagent still at work (in the
            # background) belongs to the next one. The TUI's turn_duration says so; a transcript
            # written through the SDK has none (live, the SDK's result closes the turn first).
            self._end_turn("completed", now, out)
        return held, sub

    def _spawn(self, tool_id: str, args: dict[str, Any], now: int, out: Out, uuid: str | None) -> None:
        """A `Task`/`Agent` call: no tool-call envelope; the subagent starts, then its orphans."""
        state = self.state
        if tool_id in state.subagents:
            return
        prompt = args.get("prompt")
        sub = Subagent(
            subagent_id(tool_id), subagent_title(args), prompt if isinstance(prompt, str) else None
        )
        state.subagents[tool_id] = sub
        self._agent(out, StartEv(title=sub.title), now, sub.session_id, uuid)
        for orphan in state.take_orphans(tool_id):
            self._dispatch(orphan, now, out)

    def _subagent_result(self, tool_id: str, record: Record, now: int, out: Out) -> None:
        result = record.data.get("toolUseResult")
        if isinstance(result, dict):
            agent_id = result.get("agentId")
            if isinstance(agent_id, str):
                self.state.agent_ids[agent_id] = tool_id
            if result.get("status") == "async_launched":
                return  # a background agent: its task-notification stops it
        self._stop(tool_id, now, out)

    def _stop(self, tool_id: str, now: int, out: Out) -> None:
        sub = self.state.subagents[tool_id]
        if not sub.stopped:
            sub.stopped = True
            self._agent(out, StopEv(), now, sub.session_id, None)

    # -- turns ------------------------------------------------------------------------------

    def _agent(self, out: Out, ev: Event, now: int, subagent: str | None, uuid: str | None) -> None:
        turn = self._turn(now, out)
        out.append(self._make.agent(ev, turn=turn, time=now, subagent=subagent, claude_uuid=uuid))

    def _turn(self, now: int, out: Out) -> str:
        """The open turn. A prompt opens one (see `_prompt`); agent output with no turn open (a
        background subagent working after its parent turn ended) opens one too."""
        turn = self.state.turn
        return turn if turn is not None else self._start_turn(now, out)

    def _start_turn(self, now: int, out: Out) -> str:
        turn = self.state.turn = self._new_id()
        self.state.last_stop_reason = None  # `finish` judges this turn by its own replies only
        self.state.turn_prompt = None
        out.append(self._make.agent(TurnStartEv(), turn=turn, time=now))
        return turn

    def _end_turn(self, status: TurnStatus, now: int, out: Out) -> None:
        turn = self.state.turn
        if turn is not None:
            out.append(self._make.agent(TurnEndEv(status=status), turn=turn, time=now))
            self.state.turn = None


def _is_block(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind

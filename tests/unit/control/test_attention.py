"""The attention tracker (control/attention.py): what a session's user is told about, in Happy's
CLI's words, once per event."""

from __future__ import annotations

from happy_launcher.control.attention import Attention, AttentionTracker, session_title
from happy_launcher.control.wire import Permission
from happy_launcher.protocol import EnvelopeFactory, SequentialIds, TextEv, TurnEndEv, TurnStartEv
from happy_launcher.protocol.events import TurnStatus

make = EnvelopeFactory(SequentialIds())


def request(request_id: str, tool: str) -> Permission:
    return Permission(id=request_id, tool=tool, input={"command": "rm -rf secret"}, title=tool)


def turn(
    tracker: AttentionTracker, turn_id: str, start: float, end: float, status: TurnStatus
) -> list[Attention]:
    """A turn's envelopes, fed at `start`, in between and at `end`; what the tracker said."""
    fed = [
        (make.agent(TurnStartEv(), turn=turn_id, time=0), start),
        (make.agent(TextEv(text="working"), turn=turn_id, time=0), (start + end) / 2),
        (make.agent(TurnEndEv(status=status), turn=turn_id, time=0), end),
    ]
    return [a for envelope, now in fed if (a := tracker.envelope(envelope, now)) is not None]


def test_a_permission_request_and_a_question_in_happys_words() -> None:
    tracker = AttentionTracker("s1", title="fix the tests")
    asked = tracker.permission(request("r1", "Bash"))
    assert asked == Attention("permission", "s1", "r1", "Permission request", "fix the tests", "r1", "Bash")
    question = tracker.permission(request("r2", "AskUserQuestion"))
    assert question is not None
    assert (question.kind, question.title, question.key) == ("question", "Clarification needed", "r2")
    assert "secret" not in repr(asked) + repr(question)  # the request's input never goes in


def test_only_a_long_turns_end_is_told() -> None:
    tracker = AttentionTracker("s1", long_turn=20.0)
    assert turn(tracker, "t1", 100.0, 119.0, "completed") == []
    [done] = turn(tracker, "t2", 200.0, 220.0, "completed")
    assert (done.kind, done.key, done.title, done.body) == ("done", "t2", "It's ready!", "Session")


def test_a_failed_turn_is_told_whatever_its_length_and_a_cancelled_one_never() -> None:
    tracker = AttentionTracker("s1", long_turn=20.0)
    [failed] = turn(tracker, "t1", 0.0, 1.0, "failed")
    assert (failed.kind, failed.key, failed.title) == ("failed", "t1", "It failed")
    assert turn(tracker, "t2", 0.0, 60.0, "cancelled") == []


def test_a_turn_joined_midway_counts_from_its_first_envelope_seen() -> None:
    tracker = AttentionTracker("s1", long_turn=5.0)
    assert tracker.envelope(make.agent(TextEv(text="x"), turn="t1", time=0), 10.0) is None
    done = tracker.envelope(make.agent(TurnEndEv(status="completed"), turn="t1", time=0), 15.0)
    assert done is not None and done.kind == "done"
    assert tracker.envelope(make.user_text("hi", 0), 16.0) is None  # user envelopes have no turn


def test_the_body_follows_the_sessions_title() -> None:
    tracker = AttentionTracker("s1", long_turn=0.0)
    tracker.title = session_title(None, "/home/me/project/")
    [done] = turn(tracker, "t1", 0.0, 0.0, "completed")  # a zero threshold: every turn's end
    assert done.body == "project"
    assert session_title("  Refactor the store ", "/x") == "Refactor the store"
    assert session_title(None, None) == session_title("", "/") == "Session"

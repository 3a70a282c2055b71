"""The five worked examples of seed 000, as exact envelope sequences under our rules (design §2).

Design §2 moved turn-start from Claude's first output to the prompt's user record. These
examples have no prompt record (SDK streams mid-turn), so their turn still opens with the first
agent output, as it does for any output while no turn is open.
"""

from __future__ import annotations

from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import KEPT_STOPPED, MapperState
from happy_launcher.protocol import SequentialIds, subagent_id
from tests.support.records import assistant, rec, simplify, text, tool_result, tool_use, user

NOW = 1_000


def test_example_1_remote_normal_turn() -> None:
    m = Mapper(SequentialIds())
    out = m.feed(assistant(text("I will inspect auth files.")), NOW)
    out += m.feed(assistant(tool_use("toolu_1", "Bash", command="rg auth src")), NOW)
    out += m.feed(user([tool_result("toolu_1", "src/auth/index.ts")]), NOW)
    out += m.close_turn("completed", NOW)
    assert simplify(out) == [
        {"role": "agent", "turn": "T1", "ev": {"t": "turn-start"}},
        {"role": "agent", "turn": "T1", "ev": {"t": "text", "text": "I will inspect auth files."}},
        {
            "role": "agent",
            "turn": "T1",
            "ev": {
                "t": "tool-call-start",
                "call": "toolu_1",
                "name": "Bash",
                "title": "rg auth src",
                "description": "rg auth src",
                "args": {"command": "rg auth src"},
            },
        },
        {"role": "agent", "turn": "T1", "ev": {"t": "tool-call-end", "call": "toolu_1"}},
        {"role": "agent", "turn": "T1", "ev": {"t": "turn-end", "status": "completed"}},
    ]


def test_example_2_sidechain_message_carries_the_subagent_cuid2() -> None:
    m = Mapper(SequentialIds())
    out = m.feed(assistant(tool_use("toolu_task_1", "Task", prompt="Find auth", description="Auth")), NOW)
    child = assistant(text("Subagent: found 3 files."), parent_tool_use_id="toolu_task_1")
    out += m.feed(child, NOW)
    subs = {"toolu_task_1": subagent_id("toolu_task_1")}
    assert simplify(out, subs) == [
        {"role": "agent", "turn": "T1", "ev": {"t": "turn-start"}},
        {"role": "agent", "turn": "T1", "subagent": "toolu_task_1", "ev": {"t": "start", "title": "Auth"}},
        {
            "role": "agent",
            "turn": "T1",
            "subagent": "toolu_task_1",
            "ev": {"t": "text", "text": "Subagent: found 3 files."},
        },
    ]
    assert out[-1].subagent == subagent_id("toolu_task_1") != "toolu_task_1"


def test_example_3_orphan_child_before_parent_is_buffered_then_flushed() -> None:
    m = Mapper(SequentialIds())
    child = assistant(text("child before parent"), parent_tool_use_id="toolu_late")
    assert m.feed(child, NOW) == []
    assert m.state.orphan_count == 1
    out = m.feed(assistant(tool_use("toolu_late", "Task", prompt="Inspect auth flow")), NOW)
    assert simplify(out, {"toolu_late": subagent_id("toolu_late")}) == [
        {"role": "agent", "turn": "T1", "ev": {"t": "turn-start"}},
        {
            "role": "agent",
            "turn": "T1",
            "subagent": "toolu_late",
            "ev": {"t": "start", "title": "Inspect auth flow"},
        },
        {
            "role": "agent",
            "turn": "T1",
            "subagent": "toolu_late",
            "ev": {"t": "text", "text": "child before parent"},
        },
    ]
    assert m.state.orphan_count == 0 and m.state.orphan_bytes == 0


def test_example_4_restart_keeps_turn_and_subagents_and_skips_processed_records() -> None:
    """The mapper half of restart dedupe: state survives a restart; the scanner half (processed
    keys seeded from the existing file) is tested in test_scanner."""
    m = Mapper(SequentialIds("a"))
    existing = assistant(text("existing line"), uuid="a-100")
    first = m.feed(existing, NOW)
    m.feed(assistant(tool_use("toolu_t", "Agent", description="Research")), NOW)
    saved = MapperState.from_dict(m.state.to_dict())

    restarted = Mapper(SequentialIds("b"), state=saved)
    out = restarted.feed(assistant(text("after restart"), parent_tool_use_id="toolu_t"), NOW)
    assert [e.turn for e in out] == [first[0].turn]
    assert out[0].subagent == subagent_id("toolu_t")
    assert simplify(out)[0]["ev"] == {"t": "text", "text": "after restart"}


def test_example_5_abort_while_sidechain_tool_runs() -> None:
    m = Mapper(SequentialIds())
    subs = {"toolu_task_1": subagent_id("toolu_task_1")}
    out = m.feed(assistant(tool_use("toolu_task_1", "Task", prompt="Scan", description="Scanner")), NOW)
    out += m.feed(
        assistant(tool_use("toolu_sc_1", "Bash", command="sleep 100"), parent_tool_use_id="toolu_task_1"), NOW
    )
    del out[:]
    # The converter's synthetic interrupted result for the in-flight sidechain tool.
    interrupted = rec(
        {
            "type": "user",
            "isSidechain": True,
            "parent_tool_use_id": "toolu_task_1",
            "message": {
                "role": "user",
                "content": [tool_result("toolu_sc_1", "[Request interrupted by user for tool use]", True)],
            },
        }
    )
    out += m.feed(interrupted, NOW)
    out += m.close_turn("cancelled", NOW)
    # The parent Task result arriving afterwards adds nothing: the subagent already stopped.
    out += m.feed(user([tool_result("toolu_task_1", "interrupted", True)]), NOW)
    assert simplify(out, subs) == [
        {
            "role": "agent",
            "turn": "T1",
            "subagent": "toolu_task_1",
            "ev": {"t": "tool-call-end", "call": "toolu_sc_1", "status": "cancelled"},
        },
        {"role": "agent", "turn": "T1", "subagent": "toolu_task_1", "ev": {"t": "stop"}},
        {"role": "agent", "turn": "T1", "ev": {"t": "turn-end", "status": "cancelled"}},
    ]


def test_the_saved_snapshot_stays_small_and_still_drops_a_stopped_subagents_late_record() -> None:
    """What the store saves with every commit is bounded by the open work, not the history."""
    m = Mapper(SequentialIds("a"))
    for n in range(KEPT_STOPPED + 10):
        m.feed(assistant(tool_use(f"toolu_{n}", "Agent", description=f"job {n}")), NOW)
        m.feed(assistant(text("working"), uuid=f"side-{n}", parent_tool_use_id=f"toolu_{n}"), NOW)
        m.feed(user([tool_result(f"toolu_{n}", "done")]), NOW)
    m.feed(assistant(tool_use("toolu_open", "Agent", description="still running")), NOW)
    m.feed(assistant(text("on it"), uuid="side-open", parent_tool_use_id="toolu_open"), NOW)
    snapshot = m.state.snapshot()
    assert list(snapshot["subagents"]) == ["toolu_open"]
    assert len(snapshot["stopped"]) == KEPT_STOPPED
    assert snapshot["uuid_owner"] == {"side-open": "toolu_open"}

    restarted = Mapper(SequentialIds("b"), state=MapperState.from_dict(snapshot))
    last = f"toolu_{KEPT_STOPPED + 9}"
    assert restarted.feed(assistant(text("late"), parent_tool_use_id=last), NOW) == []  # stopped
    out = restarted.feed(assistant(text("more"), parent_tool_use_id="toolu_open"), NOW)
    assert [e.subagent for e in out] == [subagent_id("toolu_open")]

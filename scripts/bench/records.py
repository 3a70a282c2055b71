"""Records for the local-mode benchmarks, shaped like the TUI writes them."""

from __future__ import annotations

import orjson


def assistant_line(n: int) -> bytes:
    """One assistant text record like the TUI writes it (one content block)."""
    return orjson.dumps(
        {
            "type": "assistant",
            "uuid": f"bench-a-{n}",
            "parentUuid": f"bench-a-{n - 1}",
            "isSidechain": False,
            "timestamp": "2026-11-21T10:00:00.000Z",
            "message": {
                "id": f"msg_{n}",
                "role": "assistant",
                "content": [{"type": "text", "text": f"Reply number {n}. " * 20}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        }
    )

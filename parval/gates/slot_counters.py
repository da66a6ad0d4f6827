"""What the status poller saw of the server's slot counters, shared by the M2, M3 and M6
judges: a server that publishes no counters cannot show concurrency or a drain."""

from __future__ import annotations

from typing import Any

NO_COUNTERS = "the server publishes no slot counters"


def counters_seen(waves: list[dict[str, Any]]) -> str:
    """What the status poller saw of the slot counters during these wave attempts:
    'present', 'absent' (/v1/models listed the model without active_slots) or 'no_answer'."""
    answered = False
    for w in waves:
        st = w.get("status") or {}
        if st.get("fields_present", st.get("max_active") is not None):
            return "present"
        polls = st.get("polls") or 0
        answered = answered or polls > (st.get("poll_errors") or 0)
    return "absent" if answered else "no_answer"

"""Putting one session's raw_sessions rows in the order things happened.

Mining and decision-point extraction both walk a session event by event and
refer to positions in it (an attempt is the ordinals `first_ordinal..last_ordinal`),
so they must agree on one order: this module is that order.

Rule: events sort by time; an event without a time takes the time of the event
before it in the same file (or the session start), so file order decides ties and
untimed sources (SWE-agent) keep their file order. Sub-agent (sidechain) files
interleave with the main file by time. Ties break on (source_path, seq).
"""

from __future__ import annotations

import pandas as pd


def order_session_events(events: pd.DataFrame) -> pd.DataFrame:
    """The events of one or more sessions, sorted as described above, with a 0-based `ordinal`
    per session and a fresh RangeIndex."""
    if events.empty:
        return events.assign(ordinal=pd.Series(dtype="int64"))
    frame = events.sort_values(["session_id", "source_path", "seq"], kind="stable")
    filled = frame.groupby(["session_id", "source_path"], sort=False)["ts"].ffill()
    frame = frame.assign(_when=filled.fillna(frame["session_start"]))
    frame = frame.sort_values(["session_id", "_when", "source_path", "seq"], kind="stable")
    frame = frame.drop(columns="_when").reset_index(drop=True)
    frame["ordinal"] = frame.groupby("session_id", sort=False).cumcount()
    return frame

"""Small helpers that turn counts and frames into the Markdown tables the Dagster UI renders."""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa

CELL_CHARS = 80


def cell(value: object) -> str:
    """One table cell: short, on one line, with no character that breaks a Markdown table."""
    text = "" if value is None else str(value)
    return text[:CELL_CHARS].replace("\n", " ").replace("|", "/")


def rows_md(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> dg.MetadataValue:
    if not rows:
        return dg.MetadataValue.md("_none_")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))


def counter_md(counter: Counter[Any], headers: tuple[str, ...]) -> dg.MetadataValue:
    """A count per key (a key may be a tuple, one column each), sorted by key."""
    rows = [(*(key if isinstance(key, tuple) else (key,)), count) for key, count in sorted(counter.items())]
    return rows_md(headers, rows)


def frame_md(frame: pd.DataFrame) -> dg.MetadataValue:
    return rows_md(list(frame.columns), list(frame.itertuples(index=False, name=None)))


def as_table(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """The frame with its declared schema, so even an empty day has typed columns."""
    return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)


def single_or_dict(values: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """What the IO manager expects: the value of a one-partition run, or a dict for a range."""
    return values[keys[0]] if len(keys) == 1 else dict(values)

"""Knobs: a configuration field's default and help text, written once on the core dataclass.

Every stage's settings are a frozen dataclass in the core (`TrainConfig`, `SelectConfig`, ...).
Each field is declared with `knob`, which stores its help text in the field's metadata, as
mlx-lm's `TrainingArgs` does. The Dagster layer derives its `Config` classes and resources from
these dataclasses (`resources/core_config.py`), so a name, type, default and description exist
in one place and the UI's launchpad shows the same text as the code.

    @dataclass(frozen=True)
    class ReplayConfig:
        max_tokens: int = knob(192, "Generated tokens per answer.")

    help_text(ReplayConfig, "max_tokens")  # "Generated tokens per answer."
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

HELP = "help"


def knob(
    default: Any = dataclasses.MISSING, help: str = "", *, factory: Callable[[], Any] | None = None
) -> Any:
    """A dataclass field with a default (or a default factory) and its help text."""
    if not help:
        raise ValueError("every knob needs a help text: it is what the Dagster UI shows")
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={HELP: help})
    return dataclasses.field(default=default, metadata={HELP: help})


def help_text(cls: type, name: str) -> str:
    """The help text of one of `cls`'s knobs."""
    for field in dataclasses.fields(cls):
        if field.name == name:
            return str(field.metadata.get(HELP, ""))
    raise KeyError(f"{cls.__name__} has no field {name!r}")

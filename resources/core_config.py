"""Dagster config classes derived from the core's dataclasses, so each knob is declared once.

A core dataclass (`TrainConfig`, `SelectConfig`, ...) declares every field with its type, default
and help text (`trajectory_pipeline.config.knob`). `derive` turns one or more of them into the
base of a Dagster `Config` (or `ConfigurableResource`) class with the same fields, defaults and
descriptions; `to_core` builds the core dataclass back from a config object. Dagster config has
no tuples, so `tuple[X, ...]` fields become lists in the launchpad and tuples again in the core.

    _Knobs = derive("ReplayKnobs", ReplayConfig, PromotionConfig, exclude={"lane"})

    class ReplayEvalConfig(_Knobs):
        extra_field: int = Field(default=1, description="...")  # asset-only knobs stay here

    replay = to_core(ReplayConfig, config)

`tests/resources/test_core_config.py` fails when a Dagster class and its core drift apart.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Collection
from typing import Any, TypeVar

import dagster as dg
from pydantic import Field

from trajectory_pipeline.config import HELP

T = TypeVar("T")


def _dagster_type(hint: Any) -> Any:
    """The type Dagster's config system accepts for a core field's type."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        items = {arg for arg in typing.get_args(hint) if arg is not Ellipsis}
        if len(items) != 1:
            raise TypeError(f"a tuple knob must hold one type of item, got {hint}")
        return list[items.pop()]  # type: ignore[misc]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_dagster_type(arg) for arg in typing.get_args(hint))]  # noqa: UP007
    return hint


def _dagster_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def derive(
    name: str,
    *cores: type,
    base: type = dg.Config,
    exclude: Collection[str] = (),
) -> Any:
    """A subclass of `base` whose fields are the knobs of `cores` (minus `exclude`).

    Returned as `Any` so it can be subclassed: the subclass adds the Dagster-only fields and the
    methods, and keeps the docstring the UI shows.
    """
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {}
    for core in cores:
        hints = typing.get_type_hints(core)
        for field in dataclasses.fields(core):
            if field.name in exclude:
                continue
            if field.name in annotations:
                raise ValueError(f"{name}: knob {field.name!r} is declared by two of {cores}")
            if HELP not in field.metadata:
                raise ValueError(f"{core.__name__}.{field.name} has no help text: declare it with knob()")
            if field.default is not dataclasses.MISSING:
                default = field.default
            elif field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            else:
                raise ValueError(f"{core.__name__}.{field.name} has no default")
            annotations[field.name] = _dagster_type(hints[field.name])
            namespace[field.name] = Field(default=_dagster_value(default), description=field.metadata[HELP])
    namespace["__annotations__"] = annotations
    namespace["__module__"] = base.__module__
    return type(name, (base,), namespace)


def to_core(core: type[T], config: Any, **overrides: Any) -> T:
    """The core dataclass `core` with the values `config` holds for its knobs (and `overrides`).

    A value the core refuses fails the run with the core's one-line reason, not a traceback.
    """
    values: dict[str, Any] = {}
    for field in dataclasses.fields(core):  # type: ignore[arg-type]
        if field.name in overrides:
            values[field.name] = overrides[field.name]
        elif hasattr(config, field.name):
            value = getattr(config, field.name)
            values[field.name] = tuple(value) if isinstance(value, list) else value
    try:
        return core(**values)
    except ValueError as err:
        raise dg.Failure(f"{type(config).__name__}: {err}") from None

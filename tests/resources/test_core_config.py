"""Each knob is declared once: the Dagster config classes are derived from the core dataclasses, and
this test fails when one drifts from the other (a field missing, a default or description changed)."""

from __future__ import annotations

import dataclasses

import dagster as dg
import pytest

from assets.decision_points import DecisionPointsConfig
from assets.lora_adapter import LoraAdapterConfig
from assets.mined_trajectories import MinedTrajectoriesConfig
from assets.raw_sessions import IngestConfig
from assets.rendered_splits import RenderedSplitsConfig
from assets.replay_eval import ReplayEvalConfig
from resources.core_config import derive, to_core
from resources.mlx_trainer import MLXTrainer
from resources.session_sources import SessionSources
from trajectory_pipeline.config import HELP
from trajectory_pipeline.dataset.render import RenderConfig
from trajectory_pipeline.dataset.splits import SelectConfig
from trajectory_pipeline.decisions.points import DecisionConfig
from trajectory_pipeline.evaluation.promotion import PromotionConfig
from trajectory_pipeline.evaluation.replay import ReplayConfig
from trajectory_pipeline.ingest.days import IngestOptions
from trajectory_pipeline.ingest.sql_events import SqlEventsConfig
from trajectory_pipeline.mining.attempts import MiningConfig
from trajectory_pipeline.training.trainer import TrainConfig
from trajectory_pipeline.training.week import WeekTraining

PAIRS = [
    (MLXTrainer, (TrainConfig,), ()),
    (IngestConfig, (IngestOptions,), ()),
    (SessionSources, (SqlEventsConfig,), ()),
    (MinedTrajectoriesConfig, (MiningConfig,), ()),
    (DecisionPointsConfig, (DecisionConfig,), ()),
    (RenderedSplitsConfig, (RenderConfig, SelectConfig), ()),
    (LoraAdapterConfig, (WeekTraining,), ()),
    (ReplayEvalConfig, (ReplayConfig, PromotionConfig), ("lane",)),
]

IDS = [dagster_class.__name__ for dagster_class, _, _ in PAIRS]


@pytest.mark.parametrize(
    ("dagster_class", "cores", "excluded"), PAIRS, ids=lambda p: getattr(p, "__name__", "")
)
def test_the_dagster_class_carries_every_knob_as_declared(
    dagster_class: type, cores: tuple[type, ...], excluded: tuple[str, ...]
) -> None:
    fields = dagster_class.model_fields  # type: ignore[attr-defined]
    for core in cores:
        for knob in dataclasses.fields(core):
            if knob.name in excluded:
                continue
            assert knob.name in fields, f"{dagster_class.__name__} lacks {core.__name__}.{knob.name}"
            field = fields[knob.name]
            assert field.description == knob.metadata[HELP]
            default = knob.default if knob.default is not dataclasses.MISSING else knob.default_factory()
            assert field.default == (list(default) if isinstance(default, tuple) else default)


@pytest.mark.parametrize(
    ("dagster_class", "cores", "excluded"), PAIRS, ids=lambda p: getattr(p, "__name__", "")
)
def test_the_defaults_round_trip_to_the_core(
    dagster_class: type, cores: tuple[type, ...], excluded: tuple[str, ...]
) -> None:
    config = dagster_class()
    for core in cores:
        assert to_core(core, config) == core()


def test_every_core_knob_has_help_text() -> None:
    for core in {core for _, cores, _ in PAIRS for core in cores}:
        for knob in dataclasses.fields(core):
            assert knob.metadata.get(HELP), f"{core.__name__}.{knob.name} has no help text"


def test_a_refused_value_fails_the_run_in_one_line() -> None:
    with pytest.raises(
        dg.Failure, match=r"^MinedTrajectoriesConfig: min_tool_calls must be at least 0, got -1$"
    ):
        to_core(MiningConfig, MinedTrajectoriesConfig(min_tool_calls=-1))


def test_tuples_are_lists_in_the_launchpad_and_tuples_again_in_the_core() -> None:
    config = DecisionPointsConfig(included_tiers=["gold"])
    assert to_core(DecisionConfig, config).included_tiers == ("gold",)


def test_a_knob_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="declared by two"):
        derive("Twice", ReplayConfig, ReplayConfig)

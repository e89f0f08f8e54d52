"""promoted_model: the week's adapter fused into its base model, once replay_eval promoted it.

For a weekly partition, after `replay_eval`, it reads the week's `lora_adapter` manifest and asks the
registry what the eval decided. A promoted adapter is fused with mlx-lm into
`<models_dir>/<adapter_id>/` (default `data/artifacts/models/`), with a model card and, with `gguf:
true`, a GGUF file and an Ollama Modelfile where mlx-lm supports the architecture; the registry
records the folder (`model_path`), which `trajectory-pipeline serve` starts.

A week whose adapter was not promoted produces no model. The asset is declared with
`output_required=False` and yields no output then: that is Dagster's way to say "nothing new this
time" (the run succeeds, the partition's last materialization, and the model in use, stay as they
were, and no downstream asset would run on a stale value). A plain return would materialize an
empty value, and a failure would mark a normal week as broken. The reason is logged and recorded as
an `AssetObservation` of the partition (metadata `skipped`, the adapter's status and the eval's
reason, and which adapter is served instead), so the asset's page in the UI says why it did not
materialize.

    trajectory-pipeline materialize --select promoted_model --partition 2026-11-22
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets import OWNERS
from assets.metadata import as_table
from assets.partitions import weekly_partitions
from resources.adapter_registry import AdapterRegistryResource
from resources.core_config import derive, to_core
from resources.privacy import private, private_failure, private_metadata
from trajectory_pipeline.evaluation.promotion import PROMOTED_STATUS
from trajectory_pipeline.serving.fuse import MODEL_MANIFEST_SCHEMA, ExportConfig, ExportError, publish_model
from trajectory_pipeline.storage import objects

_ExportKnobs: Any = derive("ExportKnobs", ExportConfig)


class PromotedModelConfig(_ExportKnobs):
    """Where fused models go, and whether GGUF is exported."""


@dg.asset(
    partitions_def=weekly_partitions,
    group_name="training",
    compute_kind="mlx",
    pool="mlx_training",  # loads the whole model: not beside a training
    ins={"lora_adapter": dg.AssetIn()},
    deps=["replay_eval"],  # the promotion decision it acts on lives in the registry
    output_required=False,
    owners=OWNERS,
    tags={"stage": "serving"},
)
def promoted_model(
    context: dg.AssetExecutionContext,
    config: PromotedModelConfig,
    adapter_registry: AdapterRegistryResource,
    lora_adapter: pd.DataFrame,
) -> Iterator[dg.Output[Any]]:
    """The promoted adapter of the week fused into its base model: the model `serve` runs."""
    manifest = lora_adapter.iloc[0]
    adapter_id = str(manifest["adapter_id"])
    registry = adapter_registry.registry()
    try:
        record = registry.get(adapter_id)
    except KeyError as err:
        raise private_failure(
            f"promoted_model for week {context.partition_key}: {err.args[0]}: point the registry "
            "resource at the database lora_adapter and replay_eval wrote to"
        ) from None
    if record.status != PROMOTED_STATUS:
        served = registry.served()
        reason = (record.eval_summary or {}).get("reason", "no eval recorded")
        keeps = f"adapter {served.adapter_id}'s model stays in use" if served else "no model is served yet"
        message = f"no new model: adapter {adapter_id} is {record.status} ({reason}); {keeps}"
        context.log.info(private(message))
        context.log_event(
            dg.AssetObservation(
                asset_key=context.asset_key,
                partition=context.partition_key,
                metadata=private_metadata(
                    {
                        "skipped": message,
                        "adapter_id": adapter_id,
                        "status": record.status,
                        "served_adapter": served.adapter_id if served else "",
                    }
                ),
            )
        )
        return
    base = Path(str(manifest["base_model"]))  # a local folder, or the cache's copy of a model's URL
    base_url = objects.remote_of(base)
    local_base = objects.fetch_tree(base_url) if base_url else base
    adapter_dir = objects.local_tree(record.artifact_path)
    try:
        fused = publish_model(record, local_base, adapter_dir, to_core(ExportConfig, config))
    except ExportError as err:
        raise private_failure(f"promoted_model: {err}") from None
    registry.record_model(adapter_id, str(fused.path))
    if fused.gguf_note:
        context.log.warning(fused.gguf_note)
    context.log.info(f"adapter {adapter_id} fused into {fused.path}; trajectory-pipeline serve now starts it")
    row = fused.manifest_row(record, str(manifest["adapter_path"]))
    metadata = {
        "model_path": dg.MetadataValue.path(str(fused.path)),
        "model_card": dg.MetadataValue.path(str(fused.card_path)),
        "architecture": fused.architecture,
        "gguf": str(fused.gguf_path) if fused.gguf_path else (fused.gguf_note or "not asked for"),
        "fuse_seconds": round(fused.seconds, 1),
        "model_card_text": dg.MetadataValue.md(fused.card_path.read_text()),
    }
    yield dg.Output(as_table(pd.DataFrame([row]), MODEL_MANIFEST_SCHEMA), metadata=private_metadata(metadata))

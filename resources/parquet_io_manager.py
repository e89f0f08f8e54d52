"""The Parquet IO manager every tabular asset is stored through.

One file per asset partition: `<base_dir>/<asset key>/<partition>.parquet`
(`<base_dir>/<asset key>.parquet` when unpartitioned). `base_dir` is a local folder or an
object-store URL (`s3://bucket/prefix`; gs://, az:// where gcsfs, adlfs are installed): the
same idea as Dagster's `UPathIOManager`, with this project's writes
(`trajectory_pipeline/storage/objects.py`). Files are written under a temporary name and renamed
(locally), or written whole in the local cache and uploaded in one PUT (an object store shows an
object only once its upload completes), so no reader, and no killed run, ever sees half a
partition; local files are 0600 in 0700 folders because they hold people's transcripts. Inputs
from an object store are read from the cache's copies (downloaded when stale), so a step and the
worker processes it forks read local files.

An asset may return a DataFrame, a pyarrow Table, a `SpooledParquet` (a file it
already streamed to disk), or — when one run covers several partitions, as a
single-run backfill does — a dict of those keyed by partition. Downstream
assets ask for what they need by type annotation: a DataFrame, Table or
`pyarrow.dataset.Dataset` (opened lazily, to stream data too big for memory) of
all requested partitions, or a dict of any of them keyed by partition.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pydantic import Field

from resources.privacy import private, private_failure
from trajectory_pipeline import settings
from trajectory_pipeline.parquet_io import SpooledParquet
from trajectory_pipeline.storage import objects

# Input metadata for a window that may have gaps (days with no sessions, not yet ingested): the
# stored partitions come as a dict and the missing ones are left out instead of failing the run.
ALLOW_MISSING = "allow_missing_partitions"

Storable: TypeAlias = pd.DataFrame | pa.Table | SpooledParquet


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores each asset partition as one private Parquet file under `base_dir`."""

    base_dir: str = Field(
        default="",
        description="Folder (created 0700 when missing) or object-store URL (s3://bucket/prefix) that "
        "holds every asset's Parquet files; empty: $TRAJECTORY_DATA_DIR, else data/warehouse.",
    )

    def base_location(self) -> str:
        """The data directory: `base_dir`, else $TRAJECTORY_DATA_DIR, else data/warehouse; a local
        path (`~` expanded) or a URL."""
        base = self.base_dir or settings.data_dir()
        return base if objects.is_remote(base) else str(objects.local_path(base))

    def location_for(self, asset_key: dg.AssetKey, partition_key: str | None = None) -> str:
        """Where one partition is stored: a local path or a URL."""
        parts = list(asset_key.path)
        if partition_key is None:
            parts[-1] += ".parquet"
        else:
            parts.append(f"{partition_key}.parquet")
        return objects.join(self.base_location(), *parts)

    # -- writing -----------------------------------------------------------------------------

    def handle_output(self, context: dg.OutputContext, obj: Storable | Mapping[str, Storable] | None) -> None:
        if obj is None:
            return
        parts = self._parts(context, obj)
        written = {key: self._write(context.asset_key, key, value) for key, value in parts.items()}
        if len(written) == 1:
            context.add_output_metadata(_file_metadata(*next(iter(written.values()))))
            return
        # One output, several partitions: each partition's materialization gets its own figures.
        for key, (path, rows, size) in written.items():
            context.step_context.add_asset_metadata(
                _file_metadata(path, rows, size), asset_key=context.asset_key, partition_key=key
            )
        context.add_output_metadata({"partitions_in_run": len(written)})

    def store_partition(self, asset_key: dg.AssetKey, partition_key: str, value: Storable) -> dict[str, Any]:
        """Store one partition outside an output (an asset that reports its own materializations);
        returns the metadata `handle_output` would have given it."""
        return _file_metadata(*self._write(asset_key, partition_key, value))

    def _parts(
        self, context: dg.OutputContext, obj: Storable | Mapping[str, Storable]
    ) -> dict[str | None, Storable]:
        """The value to store for each partition of the output (None: unpartitioned)."""
        if not context.has_asset_partitions:
            if isinstance(obj, Mapping):
                raise dg.Failure(
                    f"{context.asset_key.to_user_string()} is not partitioned; return one table."
                )
            return {None: obj}
        keys = list(context.asset_partition_keys)
        if isinstance(obj, Mapping):
            missing = set(keys) - set(obj)
            if missing:
                raise dg.Failure(
                    f"{context.asset_key.to_user_string()} returned no data for partitions "
                    f"{sorted(missing)}; a multi-partition output must be a dict with one entry "
                    "per partition in the run."
                )
            return {key: obj[key] for key in keys}
        if len(keys) != 1:
            raise dg.Failure(
                f"{context.asset_key.to_user_string()} ran for {len(keys)} partitions but returned one "
                f"{type(obj).__name__}; return a dict keyed by partition instead."
            )
        return {keys[0]: obj}

    def _write(
        self, asset_key: dg.AssetKey, partition_key: str | None, value: Storable
    ) -> tuple[str, int, int]:
        dest = self.location_for(asset_key, partition_key)
        if isinstance(value, SpooledParquet):
            return dest, value.row_count, objects.publish_file(value.path, dest)
        table = value if isinstance(value, pa.Table) else pa.Table.from_pandas(value, preserve_index=False)
        return dest, table.num_rows, objects.write_table(table, dest)

    # -- reading -----------------------------------------------------------------------------

    def load_input(self, context: dg.InputContext) -> Any:
        asset_key = context.asset_key
        keys = list(context.asset_partition_keys) if context.has_asset_partitions else [None]
        locations = {key: self.location_for(asset_key, key) for key in keys}
        found = objects.stat_many(locations.values())
        absent = [key for key, location in locations.items() if found[location] is None]
        if absent and (context.definition_metadata or {}).get(ALLOW_MISSING):
            locations = {key: location for key, location in locations.items() if key not in absent}
            context.log.info(
                f"{asset_key.to_user_string()}: {len(absent)} partition(s) of the window not stored"
            )
        elif absent:
            shown = ", ".join(str(key) for key in absent[:5]) + (" ..." if len(absent) > 5 else "")
            raise private_failure(
                f"{asset_key.to_user_string()} has no stored data for partition(s) {shown} under "
                f"{self.base_location()}. Materialize those partitions of {asset_key.to_user_string()} first."
            )
        # From an object store: the cache's copies (fresh ones are not downloaded again).
        paths = {
            key: objects.fetch(location, found[location]) if objects.is_remote(location) else Path(location)
            for key, location in locations.items()
        }
        wanted = context.dagster_type.typing_type
        if typing.get_origin(wanted) in (dict, Mapping) or wanted in (dict, Mapping):
            args = typing.get_args(wanted)
            return {
                key: _read([path], args[1] if len(args) == 2 else pd.DataFrame) for key, path in paths.items()
            }
        return _read(list(paths.values()), wanted)


def spool_root(context: dg.AssetExecutionContext) -> Path:
    """Where an asset spools the files its IO manager then moves into place: the `.spool/` folder of
    the data directory the run writes to (so a killed run's leftovers stay inside it), or the local
    cache's `spool/` when the data directory is an object store."""
    manager = getattr(context.resources, "io_manager", None)
    base = manager.base_location() if isinstance(manager, ParquetIOManager) else settings.data_dir()
    return objects.spool_root(base)


def _file_metadata(path: str, rows: int, size: int) -> dict[str, Any]:
    return {
        "dagster/row_count": rows,
        "row_count": rows,
        "path": dg.MetadataValue.path(private(path)),
        "size_bytes": size,
    }


def _read(paths: list[Path], wanted: Any) -> pd.DataFrame | pa.Table | pads.Dataset | Path:
    """Partitions as the type the consumer annotated; a Dataset is opened lazily, for streaming; a
    Path is the stored file itself (a local copy of an object), nothing read.

    A range step that hands its days to worker processes wants only the files. It holds its inputs
    for the whole step: as datasets, one per day and input, each opened by reading and parsing its
    file's footer (36 KB of row-group statistics for a day of raw_sessions), they held 43 MiB,
    their own objects and the heap the parsing left fragmented, over the 1,200 of a 600-day
    decision_points step.
    """
    if wanted is Path:
        if len(paths) != 1:
            raise TypeError("a Path input is one partition's file; annotate dict[str, Path] for several")
        return paths[0]
    if wanted is pads.Dataset:
        return pads.dataset([str(path) for path in paths], format="parquet")
    table = pa.concat_tables([pq.read_table(path) for path in paths])
    return table if wanted is pa.Table else table.to_pandas()

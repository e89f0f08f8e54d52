"""The pipeline's core, one subpackage per stage; `assets/` wires it into Dagster."""

from trajectory_pipeline.arrow_memory import use_system_arrow_pool

use_system_arrow_pool()  # before anything imports pyarrow: see arrow_memory

"""The pipeline's core, one subpackage per stage; `assets/` wires it into Dagster.

Importing the package chooses Arrow's allocator for every process of the pipeline: the C
library's, unless the user chose one.

Arrow's default in the Linux wheels, mimalloc, keeps the pages of freed buffers for reuse: a
worker that cut one day of decision points stayed at that high-water mark for the rest of the
run, and the machine pays for the high-water marks of all the processes together. Measured on
one process cutting six days in turn (unique memory after each, heap trimmed): mimalloc kept
170 to 200 MiB, jemalloc 85 to 125, the C library 16 to 22, whose freed pages the workers hand
back after every task (`parallel._trim_heap`).

Arrow reads `ARROW_DEFAULT_MEMORY_POOL` once, when pyarrow is imported, and its C++ code (dataset
scans, Parquet decoding, compute kernels) allocates from that pool whatever pyarrow's own default
says (`pa.set_memory_pool` reaches only the calls made from Python). So the variable is set in the
environment before pyarrow is imported, here, on importing this package (which `assets` and
`resources` import first), and every process started afterwards inherits it: the fork server and
its workers above all. Setting pyarrow's own default alone left the scans on mimalloc: the 40-day
CLI range run's workers peaked at 125 MiB each instead of 93, the whole run at 517 to 543 MiB
instead of 452 to 457, in the same time.
"""

import os
import sys

# Arrow's own setting of its allocator; a pool the user names there is left alone.
ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_arrow_pool() -> None:
    """The C library's allocator for Arrow in this process and the ones it starts."""
    chosen = os.environ.get(ARROW_POOL_ENV) or "system"  # unset or empty: ours
    os.environ[ARROW_POOL_ENV] = chosen
    if chosen != "system":
        return
    if "pyarrow" in sys.modules:  # imported before this package: its C++ default is already chosen
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())


use_system_arrow_pool()  # before anything imports pyarrow

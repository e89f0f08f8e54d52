"""The pipeline's core, one subpackage per stage; `assets/` wires it into Dagster.

Importing the package chooses, for every process of the pipeline, Arrow's allocator (the C
library's, unless the user chose one) and whether mlx compiles (not where it computes on a Linux
x86 CPU, unless the user chose).

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

mlx's compilation (`mx.compile`: mlx-lm's training step, activations and samplers) fuses
element-wise operations into kernels; on the CPU it writes each kernel as C++ and builds it with
`g++ -O3` at first use, about a second each, cached under `$TMPDIR/mlx` on that machine. A fresh
machine's `make demo` built 39 (its learned base took 198 s, 164 s without them; the demo 11 min
23 s, 10 min 55 s), yet the steps ran no faster compiled than not (the demo's LoRA: tokens/s
364-388 against 357-391 over 200 steps, three pairs), with losses and scores identical to the
last bit: the fused kernels compute what the operations they replace do, without SIMD either way
on x86. So where mlx computes on a Linux x86 CPU, the package sets mlx's own
switch, `MLX_DISABLE_COMPILE`, for this process and the ones it starts (mlx-lm's server among
them); TRAJECTORY_MLX_COMPILE=on keeps compiling, and a value the user gave the switch is kept
(mlx reads any value there, 0 included, as off).
On a Mac (Metal) and with mlx's CUDA build, compiling builds GPU kernels and stays on.
"""

import importlib.util
import os
import platform
import sys
from pathlib import Path

from trajectory_pipeline import settings

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


# mlx's own switch: any value turns `mx.compile` off.
MLX_COMPILE_ENV = "MLX_DISABLE_COMPILE"


def mlx_computes_on_cpu() -> bool:
    """mlx's Linux CPU build (mlx[cpu]) is installed on x86-64 and no CUDA build: read from the
    distributions beside the package, without importing mlx. Measured on x86 only: on ARM, mlx's
    CPU kernels have SIMD, which compiled ones may use too."""
    linux_x86 = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")
    spec = importlib.util.find_spec("mlx") if linux_x86 else None
    folders = {Path(folder).parent for folder in (spec.submodule_search_locations or [])} if spec else set()
    names = [entry.name for folder in folders if folder.is_dir() for entry in os.scandir(folder)]
    cpu = any(name.startswith("mlx_cpu-") and name.endswith(".dist-info") for name in names)
    return cpu and not any(name.startswith("mlx_cuda") and name.endswith(".dist-info") for name in names)


def skip_mlx_compile_on_cpu() -> None:
    """`MLX_DISABLE_COMPILE` where TRAJECTORY_MLX_COMPILE asks for it (auto: on a Linux x86 CPU)."""
    if MLX_COMPILE_ENV in os.environ:  # the user's choice, made on mlx's own switch
        return
    try:
        choice = settings.mlx_compile()
    except settings.SettingError:  # reported where the commands and the definitions start
        return
    if choice == "off" or (choice == "auto" and mlx_computes_on_cpu()):
        os.environ[MLX_COMPILE_ENV] = "1"
        if "mlx.core" in sys.modules:  # imported before this package: switched off in it too
            sys.modules["mlx.core"].disable_compile()


skip_mlx_compile_on_cpu()  # before anything imports mlx

"""Which BLAS mlx runs its matmuls on, and an optimized one where mlx runs on a Linux CPU.

mlx's Linux CPU wheel (`mlx[cpu]`) links the reference BLAS it bundles
(`site-packages/mlx_cpu.libs/libblas-*.so.3.10.0`, netlib's unoptimized loops): there a
3600x64 @ 64x2048 float32 matmul takes about 115 ms, against about 9 ms with OpenBLAS. `libmlx.so`
finds `cblas_sgemm` (and the rest) in the process's global scope before its own dependencies, so an
optimized `libblas.so.3` given to the process with `LD_PRELOAD` replaces the bundled one for every
BLAS call, the bundled LAPACK's included; nothing is patched. On macOS mlx uses Accelerate and
Metal: nothing here does anything there.

    from trajectory_pipeline import blas
    blas.find_optimized_blas()   # Path('/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3') or None
    blas.blas_in_use()           # BlasInfo(kind='optimized', name='OpenBLAS 0.3.21 ...', path=...)
    blas.log_blas_in_use(log)    # one line (a warning where mlx is on the slow reference BLAS)
    blas.reexec_with_optimized_blas()  # the CLI: exec this same command again with LD_PRELOAD set

    python -m trajectory_pipeline.blas which       # the line log_blas_in_use writes, for this process
    python -m trajectory_pipeline.blas find        # the optimized library's path (exit 1 where none)
    python -m trajectory_pipeline.blas ld-preload  # the LD_PRELOAD to start a process with (`make ui`)

Where the optimized library comes from: Debian's `libopenblas0-pthread` (`make install` installs it
as root), whose `openblas-pthread/libblas.so.3` is what `/usr/lib/<multiarch>/libblas.so.3` points
to through update-alternatives. Found in this order: the alternatives' choice when it is not the
reference `blas/libblas.so.3`, then OpenBLAS's and BLIS's Debian folders, then `libopenblas.so.0`
in /usr/lib64 (Fedora and the like).

TRAJECTORY_BLAS chooses: `auto` (the default: the optimized library found, if any), `reference` (the
bundled reference BLAS: no preload, no warning) or the path of a `libblas.so.3` to preload. Thread
count: OpenBLAS's own OPENBLAS_NUM_THREADS (default: one thread per core) is left as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import logging
import os
import platform
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from trajectory_pipeline import settings

CHOICE_ENV = settings.BLAS.name  # auto | reference | /path/to/libblas.so.3
REEXEC_ENV = settings.BLAS_REEXEC.name  # set in the re-executed process: never twice
REFERENCE_CHOICES = frozenset({"reference", "off", "none", "0"})
# Debian's folders of optimized libblas.so.3 builds (each package's private copy), best first.
DEBIAN_FOLDERS = (
    "openblas-pthread",
    "openblas-openmp",
    "openblas-serial",
    "blis-pthread",
    "blis-openmp",
    "blis-serial",
)
OTHER_LIBRARIES = ("/usr/lib64/libopenblasp.so.0", "/usr/lib64/libopenblas.so.0")
INSTALL_HINT = "install Debian's libopenblas0-pthread (`make install` does, as root)"

logger = logging.getLogger(__name__)

Kind = Literal["optimized", "reference", "accelerate", "unknown"]


class _Log(Protocol):
    def info(self, msg: str) -> object: ...
    def warning(self, msg: str) -> object: ...


@dataclass(frozen=True)
class BlasInfo:
    """The BLAS that mlx's matmuls run on in this process."""

    kind: Kind  # "reference": mlx's bundled netlib BLAS, slow; "accelerate": macOS
    name: str  # e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64, 2 threads"
    path: str | None  # the library that defines cblas_sgemm for mlx, where known

    @property
    def slow(self) -> bool:
        """The reference BLAS on Linux: what the optimized one replaces."""
        return self.kind == "reference"

    def describe(self) -> str:
        """One line: which BLAS, from where, and how to get the fast one where this is the slow one."""
        where = f" ({self.path})" if self.path else ""
        line = f"mlx BLAS: {self.name}{where}"
        if not self.slow:
            return line
        if _choice() in REFERENCE_CHOICES:
            return f"{line}, as {CHOICE_ENV}={settings.BLAS.value()} asks"
        found = find_optimized_blas()
        if found is None:
            how = f"{INSTALL_HINT} and start with LD_PRELOAD=<its libblas.so.3>"
        else:
            how = (
                f"start with LD_PRELOAD={found} (the trajectory-pipeline command and `make ui` do; "
                f"{CHOICE_ENV}=reference silences this)"
            )
        return f"{line}: about 10x slower matmuls on the CPU; for the optimized one, {how}"


def _choice() -> str:
    return settings.BLAS.value().lower()


def is_linux() -> bool:
    return sys.platform.startswith("linux")


def _multiarch() -> str:
    return str(sysconfig.get_config_var("MULTIARCH") or f"{platform.machine()}-linux-gnu")


def _is_reference(path: Path) -> bool:
    """Debian's netlib libblas3 (`.../blas/libblas.so.3`) or mlx's bundled copy."""
    return path.parent.name in ("blas", "mlx_cpu.libs")


def optimized_blas_candidates() -> list[Path]:
    """Where an optimized libblas.so.3 may be, in the order tried (existing or not)."""
    lib = Path("/usr/lib") / _multiarch()
    candidates: list[Path] = []
    chosen = lib / "libblas.so.3"  # update-alternatives' choice, when that is not the reference BLAS
    if chosen.exists() and not _is_reference(chosen.resolve()):
        candidates.append(chosen.resolve())
    candidates += [lib / folder / "libblas.so.3" for folder in DEBIAN_FOLDERS]
    candidates += [Path(path) for path in OTHER_LIBRARIES]
    return candidates


def find_optimized_blas(env: Mapping[str, str] | None = None) -> Path | None:
    """The optimized BLAS library to preload for mlx here: None on macOS (Metal and Accelerate), where
    TRAJECTORY_BLAS=reference, or where none is installed. A TRAJECTORY_BLAS path is taken as is
    when the file exists."""
    env = os.environ if env is None else env
    if not is_linux():
        return None
    choice = settings.BLAS.value(env)
    if choice.lower() in REFERENCE_CHOICES:
        return None
    if choice and choice.lower() != "auto":
        path = Path(choice)
        if path.is_file():
            return path
        logger.warning("%s=%s: no such file; mlx stays on its reference BLAS", CHOICE_ENV, choice)
        return None
    return next((path for path in optimized_blas_candidates() if path.is_file()), None)


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def _global_symbol(name: str) -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """`name` in the process's global scope (the program, its preloads and RTLD_GLOBAL libraries):
    where mlx's libmlx.so, opened RTLD_LOCAL by Python, looks before its own dependencies."""
    try:
        return getattr(ctypes.CDLL(None), name)  # dlopen(NULL): the global scope
    except AttributeError:
        return None


def _library_of(function: ctypes._CFuncPtr) -> str | None:  # type: ignore[name-defined]
    """The file of the loaded library that defines `function` (dladdr)."""
    libc = ctypes.CDLL(None)
    dladdr = getattr(libc, "dladdr", None)
    if dladdr is None:  # glibc before 2.34 keeps it in libdl
        found = ctypes.util.find_library("dl")
        dladdr = ctypes.CDLL(found).dladdr if found else None
    if dladdr is None:
        return None
    dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
    info = _DlInfo()
    address = ctypes.cast(function, ctypes.c_void_p).value
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return str(info.dli_fname.decode())


def loaded_libraries() -> list[str]:
    """Files of the BLAS and LAPACK libraries mapped into this process (from /proc/self/maps)."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    paths = {line.split(None, 5)[5] for line in lines if len(line.split(None, 5)) == 6}
    # Basenames only: a checkout's own path may well contain "blas".
    words = ("blas", "lapack", "blis", "mkl")
    return sorted(p for p in paths if p.startswith("/") and any(w in Path(p).name for w in words))


def _bundled_reference() -> str | None:
    """mlx's bundled libblas: mapped once mlx is imported, else found beside the installed package."""
    for path in loaded_libraries():
        if Path(path).parent.name == "mlx_cpu.libs" and Path(path).name.startswith("libblas"):
            return path
    spec = importlib.util.find_spec("mlx")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        found = sorted((Path(folder).parent / "mlx_cpu.libs").glob("libblas*.so*"))
        if found:
            return str(found[0])
    return None


def _optimized_name(path: str) -> str:
    get_config = _global_symbol("openblas_get_config")
    if get_config is not None:
        get_config.restype = ctypes.c_char_p
        name = str(get_config().decode())
        threads = _global_symbol("openblas_get_num_threads")
        if threads is not None:
            threads.restype = ctypes.c_int
            count = threads()
            name += f", {count} thread{'s' if count != 1 else ''}"
        return name
    if _global_symbol("bli_info_get_version_str") is not None:
        return "BLIS"
    if _global_symbol("mkl_get_max_threads") is not None:
        return "Intel MKL"
    return Path(path).name


def blas_in_use() -> BlasInfo:
    """The BLAS that mlx's matmuls run on in this process, whether mlx is imported yet or not."""
    if sys.platform == "darwin":
        return BlasInfo("accelerate", "Apple Accelerate (mlx on macOS; the GPU through Metal)", None)
    if not is_linux():
        return BlasInfo("unknown", f"not known on {sys.platform}", None)
    sgemm = _global_symbol("cblas_sgemm")
    provider = _library_of(sgemm) if sgemm is not None else None
    if provider is not None and not _is_reference(Path(provider).resolve()):
        return BlasInfo("optimized", _optimized_name(provider), provider)
    if provider is not None:
        return BlasInfo("reference", "reference BLAS (netlib), preloaded", provider)
    return BlasInfo("reference", "reference BLAS bundled with mlx (netlib)", _bundled_reference())


def log_blas_in_use(log: _Log | None = None) -> BlasInfo:
    """Say in one line which BLAS mlx runs on here, to `log` (a logging.Logger or Dagster's
    `context.log`; this module's logger by default): for the trainer and replay to call as they
    start. A warning, with the way to the fast one, where it is the slow reference BLAS."""
    info = blas_in_use()
    target = log if log is not None else logger
    if info.slow and _choice() not in REFERENCE_CHOICES:
        target.warning(info.describe())
    else:
        target.info(info.describe())
    return info


def _preloads(value: str) -> list[str]:
    return value.replace(":", " ").split()


def preload_env(env: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """`env` with the optimized BLAS appended to LD_PRELOAD (and TRAJECTORY_BLAS_REEXEC set to it),
    or None where there is nothing to add: not Linux, TRAJECTORY_BLAS=reference, none installed,
    already re-executed once, or LD_PRELOAD naming a BLAS already (the user's own choice)."""
    env = dict(os.environ if env is None else env)
    if settings.BLAS_REEXEC.value(env):
        return None
    path = find_optimized_blas(env)
    if path is None:
        return None
    preloads = _preloads(env.get("LD_PRELOAD", ""))
    if any(word in Path(p).name for p in preloads for word in ("blas", "blis", "mkl")):
        return None
    env["LD_PRELOAD"] = ":".join([*preloads, str(path)])
    env[REEXEC_ENV] = str(path)
    return env


def reexec_with_optimized_blas(argv: Sequence[str] | None = None) -> None:
    """Replace this process by the same command with the optimized BLAS preloaded, once: where one
    is installed, this process is not on it yet and TRAJECTORY_BLAS allows. Returns (doing nothing)
    otherwise, or where the exec fails. Arguments, working directory and open files (stdin, stdout)
    are kept; `argv` defaults to this interpreter's own command line (`sys.orig_argv`)."""
    env = preload_env()
    if env is None or not blas_in_use().slow:
        return
    command = [sys.executable, *(sys.orig_argv[1:] if argv is None else argv)]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, command, env)
    except OSError as error:
        preloaded = env[REEXEC_ENV]
        logger.warning(
            "could not restart with %s preloaded (%s): mlx stays on reference BLAS", preloaded, error
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "which"
    if command == "which":
        print(blas_in_use().describe())
        return 0
    if command == "find":
        found = find_optimized_blas()
        if found is not None:
            print(found)
        return 0 if found is not None else 1
    if command == "ld-preload":
        env = preload_env()
        if env is None:
            print(os.environ.get("LD_PRELOAD", ""))
            if is_linux() and blas_in_use().slow:
                print(blas_in_use().describe(), file=sys.stderr)
        else:
            print(env["LD_PRELOAD"])
            print(f"mlx BLAS: {env[REEXEC_ENV]}, preloaded", file=sys.stderr)
        return 0
    print(f"usage: python -m trajectory_pipeline.blas [which | find | ld-preload], not {command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())

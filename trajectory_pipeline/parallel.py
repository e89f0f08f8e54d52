"""Run independent pieces of a range run (chunks of days) in worker processes, results in order.

Ingesting, mining and cutting decision points are pure Python: threads would share one core, so
a range run spreads its days over processes. Workers are not forked from the caller: a Dagster
step process runs threads of its own, and a fork copies their held locks. They are forked from
a *fork server*, a clean single-threaded process started once per caller that has already
imported the stages, so a pool starts in milliseconds rather than paying a fresh interpreter's
imports per worker and per stage (about half a second each, more on a busy machine), and the
workers share those modules' memory. Where there is no fork server (Windows) they are spawned.
Small jobs run inline.

Memory: the machine pays for every process's high-water mark at once, so a worker gives back
what a task freed before the next one (Arrow on the C library's allocator and one thread a pool,
the heap trimmed), is replaced by a fresh one after a few tasks (what stays fragmented goes with
it), and workers never import the caller's main script (under Dagster, all of Dagster).

    results = map_in_processes(ingest_chunk, chunks, workers=2)
    for mined in imap_in_processes(mine_day, days, workers=2): ...  # a few results held at a time
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import itertools
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import sys
import types
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

from trajectory_pipeline import settings

T = TypeVar("T")
R = TypeVar("R")

# Container allocations between young-generation collections while a task runs (CPython's
# default is 700); see `sparing_gc`.
TASK_GC_THRESHOLD = 100_000
# Tasks per worker process before fresh ones take over. A worker's memory grows with the tasks
# it ran, however much each frees (Python's arenas and the C heap fragment, caches fill): over 150
# days of a busy user's logs, mining workers ended at 155 MiB and cutting ones at 250, against 120
# and 170 when replaced every 8 days, for no measurable time (a fork from the fork server is cheap).
TASKS_PER_WORKER = 8
# What the fork server imports once, for every worker it forks: the modules of the tasks.
_PRELOAD = ["trajectory_pipeline.ingest.days", "trajectory_pipeline.day_stages"]


def default_workers() -> int:
    """The CPUs this process may use (cgroup and affinity aware), or `TRAJECTORY_WORKERS` when set."""
    configured = settings.workers()
    if configured is not None:
        return configured
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        cpus = os.process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):  # Linux
        cpus = len(os.sched_getaffinity(0))
    else:  # macOS
        cpus = os.cpu_count()
    return max(1, cpus or 1)


def map_in_processes(fn: Callable[[T], R], tasks: Sequence[T], workers: int) -> list[R]:
    """fn over the tasks, in task order; see `imap_in_processes`."""
    return list(imap_in_processes(fn, tasks, workers))


def imap_in_processes(fn: Callable[[T], R], tasks: Sequence[T], workers: int) -> Iterator[R]:
    """fn over the tasks, yielded in task order; inline when one worker (or one task) is all there is.

    At most two tasks per worker are in flight, so results waiting for the caller stay few
    however many tasks there are. `fn` and the tasks must be picklable (a module-level function,
    plain data); a script that calls this needs the `if __name__ == "__main__":` guard, as with any
    spawned process. The first failure is raised once running tasks stop; nothing is left running.
    Every `TASKS_PER_WORKER` tasks per worker, fresh workers are forked for the next ones.
    """
    workers = min(workers, len(tasks))
    run = functools.partial(_run_sparing_gc, fn)
    if workers <= 1:
        yield from (run(task) for task in tasks)
        return
    hidden = contextlib.nullcontext if _mentions_main(fn, tasks) else _main_hidden
    per_pool = workers * TASKS_PER_WORKER
    for start in range(0, len(tasks), per_pool):
        yield from _imap_pool(run, tasks[start : start + per_pool], workers, hidden)


def _imap_pool(
    run: Callable[[T], R],
    tasks: Sequence[T],
    workers: int,
    hidden: Callable[[], contextlib.AbstractContextManager[None]],
) -> Iterator[R]:
    """`imap_in_processes` on one pool of `workers` fresh processes."""
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_worker_started) as pool:
        pending: deque[Future[R]] = deque()
        try:
            for task in tasks:
                with hidden():  # a submit may start a worker process
                    pending.append(pool.submit(run, task))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def warm_up(workers: int) -> None:
    """Start the fork server now, so its imports overlap what the caller does before its tasks
    (ingestion lists and plans the files first; `trajectory-pipeline materialize` imports Dagster).
    The server copies the environment as it starts: a variable set afterwards reaches no worker."""
    if workers > 1 and isinstance(_context(), multiprocessing.context.ForkServerContext):
        multiprocessing.forkserver.ensure_running()


def _mentions_main(fn: Callable[..., object], tasks: Sequence[object]) -> bool:
    """Whether the function or a task refers to something defined in a script's `__main__` (a
    function, a partial of one, a class of the tasks): then the workers need that script."""
    return any(b"__main__" in pickle.dumps(part) for part in itertools.chain((fn,), tasks))  # one at a time


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """While a worker may start, keep it from importing the caller's main script.

    A spawned or forkserver-forked worker first imports its parent's `__main__` (as `__mp_main__`),
    in case a task refers to something defined there. Under Dagster the parent's main is the
    `dagster` command, so every worker imported all of Dagster before its first task, for tasks that
    live in this package: 800 modules more, 40 to 70 MiB more at a decision-points worker's peak,
    and on 12 days of a busy user's logs 1.8 s of a 16.7 s CLI run. The worker is started (if at
    all) inside `submit`, which reads `__main__` then; so `__main__` is a module with no file for
    the length of a submit: microseconds, milliseconds when a worker starts. Used only when nothing
    submitted refers to `__main__` (`_mentions_main`), so the pool's thread that pickles the tasks
    never needs it either.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")  # no file, no spec: nothing to import
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods() or not _fork_server_imports_ours():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)  # no effect once this process's fork server runs
    return context


def _fork_server_imports_ours() -> bool:
    """Whether the fork server's imports find this very package.

    The fork server imports its preloads on a path of its own that starts with the working folder
    (Python 3.11 does not pass it the caller's path), so a different checkout of the package there
    would run in the workers. Then the workers are spawned: they import on the caller's path.
    """
    ours = Path(__file__).resolve().parent
    there = Path.cwd() / ours.name
    return not there.exists() or there.resolve() == ours


@contextlib.contextmanager
def sparing_gc(threshold: int = TASK_GC_THRESHOLD) -> Iterator[None]:
    """Collect young garbage every `threshold` allocations instead of every 700, then restore.

    A task builds hundreds of thousands of short-lived tuples, dicts and lists, and each
    700th allocation starts a collection that walks the young ones (and, in turn, the older
    generations): about a tenth of an ingest or mining pass, for garbage that reference
    counting frees anyway. Collections still run, less often, so reference cycles are freed.
    """
    old = gc.get_threshold()
    gc.set_threshold(threshold, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _worker_started() -> None:
    """Arrow's thread pools in a worker cut to one thread each: a range run starts a worker per
    CPU (fewer only when it has fewer tasks), and in each worker Arrow's CPU pool would start a
    thread per core and its I/O pool eight.

    Those threads cost memory, not only switches: the C library gives each thread that allocates
    an arena of its own, which a worker kept between tasks. The CLI range run's process tree over
    a busy user's logs peaked 29 MiB lower on 150 days (543 against 572 MiB, two runs each,
    alternating) and 24 lower on 40, in the same time.
    """
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def _trim_heap() -> None:
    """Hand the heap's free pages back to the OS (glibc's `malloc_trim`); nothing elsewhere."""
    release = _malloc_trim()
    if release is not None:
        release(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:  # the symbols the process already has, the C library's among them
        release = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # musl: no malloc_trim
        return None
    release.argtypes, release.restype = [ctypes.c_size_t], ctypes.c_int
    return release  # type: ignore[no-any-return]


def _run_sparing_gc(fn: Callable[[T], R], task: T) -> R:
    """A task, then its freed memory given back, so a worker holds one task's worth at a time."""
    try:
        with sparing_gc():
            return fn(task)
    finally:
        _trim_heap()


_malloc_trim()  # looked up once, in the fork server: its workers inherit it

"""Run independent pieces of a range run (chunks of days) in worker processes, results in order.

Ingesting, mining and cutting decision points are pure Python: threads would share one core, so
a range run spreads its days over processes. Workers are not forked from the caller: a Dagster
step process runs threads of its own, and a fork copies their held locks. They are forked from
a *fork server*, a clean single-threaded process started once per caller that has already
imported the stages, so a pool starts in milliseconds rather than paying a fresh interpreter's
imports per worker and per stage (about half a second each, more on a busy machine), and the
workers share those modules' memory. Where there is no fork server (Windows) they are spawned.
Small jobs run inline.

    results = map_in_processes(ingest_chunk, chunks, workers=2)
    for mined in imap_in_processes(mine_day, days, workers=2): ...  # a few results held at a time
"""

from __future__ import annotations

import contextlib
import functools
import gc
import multiprocessing
import multiprocessing.forkserver
import os
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
    """
    workers = min(workers, len(tasks))
    run = functools.partial(_run_sparing_gc, fn)
    if workers <= 1:
        yield from (run(task) for task in tasks)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        pending: deque[Future[R]] = deque()
        try:
            for task in tasks:
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
    (ingestion lists and plans the files first)."""
    if workers > 1 and isinstance(_context(), multiprocessing.context.ForkServerContext):
        multiprocessing.forkserver.ensure_running()


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


def _run_sparing_gc(fn: Callable[[T], R], task: T) -> R:
    with sparing_gc():
        return fn(task)

"""Run independent pieces of a range run (chunks of days) in worker processes, results in order.

Ingesting, mining and cutting decision points are pure Python: threads would share one core, so
a range run spreads its days over processes. Workers are *spawned*, not forked: a Dagster step
process runs threads of its own, and a fork copies their held locks. Spawning costs a fresh
interpreter and its imports (about half a second), so small jobs run inline.

    results = map_in_processes(ingest_chunk, chunks, workers=2)
    for mined in imap_in_processes(mine_day, days, workers=2): ...  # a few results held at a time
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS_ENV = "TRAJECTORY_WORKERS"


def default_workers() -> int:
    """The CPUs this process may use (cgroup and affinity aware), or `TRAJECTORY_WORKERS` when set."""
    configured = os.environ.get(WORKERS_ENV, "").strip()
    if configured:
        try:
            workers = int(configured)
        except ValueError:
            raise ValueError(f"{WORKERS_ENV}={configured!r} is not a whole number of processes") from None
        if workers < 1:
            raise ValueError(f"{WORKERS_ENV}={configured!r}: use 1 or more processes")
        return workers
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
    if workers <= 1:
        yield from (fn(task) for task in tasks)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: deque[Future[R]] = deque()
        try:
            for task in tasks:
                pending.append(pool.submit(fn, task))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()

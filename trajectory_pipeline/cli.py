"""The `trajectory-pipeline` command.

trajectory-pipeline sample-corpus --out data/sample_corpus   # generate the bundled sample sessions
trajectory-pipeline tiny-model --out data/tiny-model --data data/mlx/sample-window   # the bundled tiny model
trajectory-pipeline learn-base --model data/tiny-model --data data/mlx/sample-window # its learned base
trajectory-pipeline demo                                      # run the chain on them (what `make demo` does)
trajectory-pipeline materialize --select raw_sessions,raw_sessions_quarantine --partition 2026-11-20
trajectory-pipeline materialize --job daily_ingest_job --partition-range 2026-11-09...2026-11-22
trajectory-pipeline serve --port 8080                         # the promoted model, OpenAI API on 127.0.0.1

This is the project's entry point, the one core module allowed to reach the Dagster layer
(`assets/`): `demo` and `materialize` run the graph, and import it only when asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from trajectory_pipeline import blas, parallel, settings
from trajectory_pipeline.sample import corpus as sample_corpus
from trajectory_pipeline.sample import tiny_base, tiny_model
from trajectory_pipeline.settings import SettingError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trajectory-pipeline", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    corpus = commands.add_parser(
        "sample-corpus", help="generate realistic sessions in every supported format"
    )
    sample_corpus.add_arguments(corpus)
    model = commands.add_parser(
        "tiny-model", help="build the bundled tiny MLX model (offline, deterministic)"
    )
    tiny_model.add_arguments(model)
    base = commands.add_parser(
        "learn-base", help="teach the tiny model the corpus's language: a short full fine-tune, once"
    )
    tiny_base.add_arguments(base)
    demo = commands.add_parser(
        "demo", help="materialize the pipeline on the sample corpus and print a summary"
    )
    demo.add_argument(
        "--corpus", default="data/sample_corpus", help="sample corpus folder (generated if absent or empty)"
    )
    demo.add_argument("--data-dir", default="data/warehouse", help="where the Parquet tables are written")
    launch = commands.add_parser(
        "materialize", help="materialize assets or a job for a day, a week or a range, in one run"
    )
    launch.add_argument("--select", help="assets, comma-separated: raw_sessions,raw_sessions_quarantine")
    launch.add_argument("--job", help="a job instead of a selection (daily_ingest_job, weekly_retrain_job)")
    launch.add_argument("--partition", help="one UTC day (weekly assets: the Sunday that starts the week)")
    launch.add_argument("--partition-range", help="FIRST...LAST, both included, in one run")
    launch.add_argument(
        "--config", help="a run config file (YAML or JSON; ops: and resources:, as in the launchpad)"
    )
    server = commands.add_parser(
        "serve", help="mlx-lm's OpenAI-compatible server on 127.0.0.1 with the registry's promoted model"
    )
    default_port = f"${settings.SERVE_PORT.name}, else {settings.SERVE_PORT.default}"
    server.add_argument("--port", type=_port, help=f"TCP port (default: {default_port})")
    return parser


def _port(text: str) -> int:
    port = settings.port_number(text.strip())
    if port is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port number from 1 to 65535")
    return port


MLX_COMMANDS = ("tiny-model", "learn-base", "demo")  # serve says which BLAS once it has a model


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the console script: once, the same command again on an optimized BLAS (blas.py)
        blas.reexec_with_optimized_blas()
    args = build_parser().parse_args(argv)
    try:
        settings.mlx_compile()  # applied on importing the package, which cannot say what is wrong
    except SettingError as err:
        print(f"trajectory-pipeline {args.command}: {err}", file=sys.stderr)
        return 2
    if args.command in MLX_COMMANDS:
        print(f"trajectory-pipeline: {blas.blas_in_use().describe()}", file=sys.stderr)
    if args.command == "sample-corpus":
        return sample_corpus.run(args)
    if args.command == "tiny-model":
        return tiny_model.run(args)
    if args.command == "learn-base":
        return tiny_base.run(args)
    if args.command == "serve":
        return _serve(args.port)
    try:
        return _run_graph(args)
    except SettingError as err:  # a TRAJECTORY_* variable the definitions could not load with
        print(f"trajectory-pipeline {args.command}: {err}", file=sys.stderr)
        return 2


def _serve(port: int | None) -> int:
    """`serve`: the registry's promoted model in mlx-lm's server; one line, no traceback, when there is
    none (the line says how to get one). Needs no Dagster: the registry is read directly."""
    from sqlalchemy.exc import SQLAlchemyError

    from trajectory_pipeline.serving.server import NothingToServe, serve
    from trajectory_pipeline.training.registry import AdapterRegistry, default_url, sqlite_file

    try:
        port = port if port is not None else settings.serve_port()
        registry_url = default_url()
        database = sqlite_file(registry_url)
        if database is not None and not database.exists():
            raise NothingToServe(  # reading it would create an empty one
                f"no adapter registry at {database}: train and promote an adapter first (make demo, "
                f"or weekly_retrain_job), or point {settings.REGISTRY_URL.name} at yours"
            )
        serve(AdapterRegistry(registry_url), port, blas.blas_in_use().describe())
    except (NothingToServe, SettingError) as err:
        print(f"trajectory-pipeline serve: {err}", file=sys.stderr)
        return 2
    except SQLAlchemyError as err:  # a registry database that cannot be reached or read
        print(
            f"trajectory-pipeline serve: cannot read the adapter registry: {type(err).__name__}",
            file=sys.stderr,
        )
        return 2
    return 0  # not reached: serve() becomes the server


def _run_graph(args: argparse.Namespace) -> int:
    """The commands that run the Dagster graph: imported only when asked for (they load dagster)."""
    if args.command == "materialize":
        if args.partition_range is not None:
            # Days for the stages' worker processes: their fork server imports the stages (~0.6 s)
            # beside this process's imports of Dagster and the definitions, not after them at the
            # first step. A bad TRAJECTORY_WORKERS is the run's to report (its config may override it).
            with contextlib.suppress(SettingError):
                parallel.warm_up(parallel.default_workers())
        from assets.launch import run

        return run(args.select, args.job, args.partition, args.partition_range, args.config)
    from assets.demo import run_demo

    return run_demo(args.corpus, args.data_dir)


if __name__ == "__main__":
    sys.exit(main())

"""`alpineagents worker MODULE:WORKERS`: serve the queued runs of an `alpineagents.workers.Workers` in this process."""

from __future__ import annotations

import click

from alpineagents.cli.agents import load_object


@click.command(short_help="Serve queued runs (alpineagents.workers) until stopped.")
@click.argument("workers_spec", metavar="MODULE:WORKERS")
@click.option("--id", "worker_id", help="This worker's name in the queue (each live worker its own; default: random).")
def worker(workers_spec: str, worker_id: str | None) -> None:
    """Take the runs queued for the Workers object MODULE:WORKERS and run them here, until SIGTERM or Ctrl+C.

    Runs of workers that died are taken over. On SIGTERM the runs going on get the Workers' grace time to finish;
    the others are left for the other workers. Needs the dbos extra: pip install -e '.[dbos]' in the library's clone.
    """
    try:
        from alpineagents.workers import Workers
    except ImportError as error:
        raise click.ClickException(str(error).splitlines()[0])
    workers = load_object(workers_spec, Workers)
    click.echo(f"serving {workers!r}", err=True)
    workers.serve(worker_id=worker_id)

"""`alpineagents eval MODULE:DATASET --agent MODULE:AGENT`: run an eval from the command line.

Every run is saved in the store (so `alpineagents view` shows each), a table goes to the terminal (or JSON with
`--json`), `--html FILE` writes the report page, and the exit code is 1 when an Agent's pass rate is under
`--threshold` (for CI). `--compare MODULE:OTHER` or `--model M` evaluates a second Agent on the same cases.
"""

from __future__ import annotations

from pathlib import Path

import click

from alpineagents.agent import Agent
from alpineagents.cli.agents import load_agent, load_object
from alpineagents.cli.output import note, print_json, say
from alpineagents.cli.stores import Misuse, chosen_store, store_errors, store_option
from alpineagents.evals import Case, Dataset, Report, run_evals
from alpineagents.viewer.runs import first_line


def _dataset(spec: str) -> Dataset:
    """The dataset `spec` names: a `.yaml`/`.yml`/`.jsonl` file, or MODULE:NAME (a Dataset or a list of Cases)."""
    if Path(spec).suffix in (".yaml", ".yml", ".jsonl") and Path(spec).is_file():
        try:
            return Dataset.load(spec)
        except (ValueError, OSError) as error:
            raise Misuse(f"{spec}: {first_line(error)}")
    found = load_object(spec, object)
    if isinstance(found, Dataset):
        return found
    if isinstance(found, list | tuple) and all(isinstance(case, Case) for case in found):  # pyright: ignore
        return Dataset(found, name=spec.rpartition(":")[2])  # pyright: ignore[reportUnknownArgumentType]
    raise Misuse(f"{spec} is a {type(found).__name__}, not a Dataset (or a list of Case)")


def _agents(agent_spec: str, other_spec: str | None, model: str | None) -> list[Agent]:
    agent = load_agent(agent_spec)
    if other_spec and model:
        raise Misuse("give --compare or --model, not both")
    if other_spec:
        return [agent, load_agent(other_spec)]
    if model:
        try:
            return [agent, agent.copy(model=model, name=f"{agent.name or 'agent'} with {model}")]
        except (TypeError, ValueError) as error:
            raise Misuse(first_line(error))
    return [agent]


def _comparison(reports: list[Report]) -> str:
    """Each case's passed runs side by side, marking the cases where the two Agents differ."""
    a, b = reports
    width = max([4, *(len(case.name) for case in a.cases)])
    lines = [f"{'case':<{width}}  {'A':>7}  {'B':>7}"]
    for one, two in zip(a.cases, b.cases, strict=True):
        mark = "  <- differs" if one.passed != two.passed else ""
        lines.append(f"{one.name:<{width}}  {f'{one.passed}/{one.runs}':>7}  {f'{two.passed}/{two.runs}':>7}{mark}")
    lines.append(f"{'all':<{width}}  {a.pass_rate:>7.0%}  {b.pass_rate:>7.0%}")
    return "\n".join(lines)


@click.command(name="eval", short_help="Run an eval dataset against an Agent.")
@click.argument("dataset_spec", metavar="MODULE:DATASET")
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:AGENT", help="The Agent to evaluate.")
@click.option("--compare", "other_spec", metavar="MODULE:OTHER", help="A second Agent to evaluate on the same cases.")
@click.option("--model", help="Evaluate the Agent with this model too (e.g. openai/gpt-5), side by side.")
@click.option("--judge", help="The model that grades judge checks without a model of their own.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True, help="Runs at once.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Runs per case.")
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=1.0,
    show_default=True,
    help="Exit with 1 when an Agent's pass rate is under this (0 to 1).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write the HTML report to this file.")
@store_option
def evaluate(
    dataset_spec: str,
    agent_spec: str,
    other_spec: str | None,
    model: str | None,
    judge: str | None,
    concurrency: int,
    repeat: int,
    threshold: float,
    as_json: bool,
    html_path: str | None,
    store: str | None,
) -> None:
    """Run every case of MODULE:DATASET (or a .yaml/.jsonl file) against the Agent, print how it did, and exit
    with 1 when its pass rate is under --threshold."""
    dataset = _dataset(dataset_spec)
    agents = _agents(agent_spec, other_spec, model)
    opened = chosen_store(store, create=True)
    reports: list[Report] = []
    with store_errors():
        for agent in agents:
            try:
                reports.append(
                    run_evals(agent, dataset, concurrency=concurrency, repeat=repeat, store=opened, judge=judge)
                )
            except (TypeError, ValueError) as error:
                raise Misuse(first_line(error))
    if html_path:
        from alpineagents.viewer.evals import evals_html  # needs the viewer extra (Jinja2)

        Path(html_path).write_text(evals_html(reports, threshold), encoding="utf-8")
    ok = all(report.pass_rate >= threshold for report in reports)
    if as_json:
        print_json({"threshold": threshold, "ok": ok, "reports": [report.to_json() for report in reports]})
    else:
        say("\n\n".join(report.table() for report in reports))  # reasons quote model text: escapes shown
        if len(reports) == 2:
            say("\n" + _comparison(reports))
    for report in reports:
        note(
            f"{report.agent}: runs saved as {report.eval_id}-*; alpineagents view shows the report at /evals/{report.eval_id}"
        )
    if html_path:
        note(f"report written to {html_path}")
    if not ok:
        under = [f"{report.agent} {report.pass_rate:.0%}" for report in reports if report.pass_rate < threshold]
        raise click.ClickException(f"pass rate under the threshold {threshold:.0%}: {', '.join(under)}")

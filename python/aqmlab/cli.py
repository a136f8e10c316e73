"""The ``aqmlab`` command.

Every command has ``--help`` with an example. Bad input exits with status 2 and one line
on stderr (``error: FIELD: what is wrong (line N)``), never a traceback; an internal
failure exits with status 1 (set ``AQMLAB_DEBUG=1`` to see the traceback).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import click

from aqmlab.errors import AqmlabError, ScenarioError, SimulationError

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130

CATEGORIES = ("qdiscs", "cc", "workloads", "studies")


def _fail(message: str, code: int) -> None:
    click.echo("error: " + " ".join(str(message).split()), err=True)
    sys.exit(code)


def _console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Wide enough for the summary tables when output goes to a file or a pipe.
    width = None if stream.isatty() else max(shutil.get_terminal_size((160, 24)).columns, 160)
    return Console(file=stream, width=width, highlight=False)


def _study_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("AQMLAB_STUDIES", "").split(os.pathsep) if p]
    here = Path(__file__).resolve().parent
    dirs.append(here / "studies")  # shipped inside the package (wheel)
    dirs.append(here.parent.parent / "studies")  # the repository's studies/ (development install)
    return dirs


def find_studies() -> dict[str, Path]:
    """Study name → its TOML file, from ``$AQMLAB_STUDIES``, the package and the repo."""
    found: dict[str, Path] = {}
    for d in _study_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                found.setdefault(p.stem, p)
    return dict(sorted(found.items()))


def _study_about(path: Path) -> str:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return str(path)
    for table in (data.get("study", {}), data.get("run", {}), data):
        if isinstance(table, dict) and isinstance(table.get("description"), str):
            return " ".join(table["description"].split())
    return str(path)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from aqmlab import __version__

        click.echo(f"aqmlab {__version__}")
        ctx.exit()


class _Interrupted(Exception):
    """Ctrl-C during a command (raised instead of KeyboardInterrupt so that click does not
    print its own blank line)."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted() from None


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Example: aqmlab run examples/fifo_overload.toml --seed 1",
)
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version, help="Print the version and exit.")
def cli() -> None:
    """aqmlab: simulate queue disciplines (AQM) on a bottleneck described in a TOML file."""


@cli.command("run", short_help="Run a scenario; print flow and queue tables, JSON or Parquet.")
@click.argument("file", metavar="FILE.toml")
@click.option("--seed", type=int, default=None, help="Run seed (default: the scenario's run.seed, 1).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None, help="Write Parquet tables, scenario.toml and meta.json to this directory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (flows, queues, probes, events, wall_seconds) instead of tables.")
@click.option("--all-queues", is_flag=True, help="Show idle links in the queue table too.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing on success (useful with --out).")
def run_cmd(file: str, seed: int | None, out: str | None, as_json: bool, all_queues: bool, quiet: bool) -> None:
    """Run a scenario and print a summary of its flows and queues.

    \b
    Examples:
      aqmlab run examples/fifo_overload.toml
      aqmlab run examples/ping_rtts.toml --seed 7 --out results/ping
      aqmlab run examples/fifo_overload.toml --json | python -m json.tool
    """
    import aqmlab

    sc = aqmlab.load_scenario(Path(file))
    progress = None
    bar = None
    if not as_json and not quiet and sys.stderr.isatty():
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), console=_console(stderr=True), transient=True)
        task = bar.add_task("run", total=1.0)

        def progress(frac: float) -> None:
            bar.update(task, completed=frac)

    if bar is not None:
        with bar:
            result = aqmlab.run(sc, seed=seed, progress=progress)
    else:
        result = aqmlab.run(sc, seed=seed)
    if out is not None:
        result.write_parquet(out)
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
    elif not quiet:
        _console().print(result.summary_table(all_queues=all_queues))
        if out is not None:
            click.echo(f"results written to {out}/")


@cli.command("validate", short_help="Check a scenario without running it.")
@click.argument("file", metavar="FILE.toml")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved nodes, links and flows as JSON.")
def validate_cmd(file: str, as_json: bool) -> None:
    """Check a scenario without running it and show what it resolves to.

    \b
    Example:
      aqmlab validate examples/ping_rtts.toml
    """
    import aqmlab

    plan = aqmlab.validate(Path(file))
    if as_json:
        sys.stdout.write(json.dumps(plan) + "\n")
        return
    from rich.table import Table

    con = _console()
    name = plan.get("name") or Path(file).stem
    con.print(
        f"ok: {name}: {len(plan['nodes'])} nodes, {len(plan['links'])} links, {len(plan['flows'])} flows; "
        f"{plan['duration']:g} s, warm-up {plan['warmup']:g} s, bins {plan['bin']:g} s, seed {plan['seed']}"
    )
    ft = Table(title="flows", title_justify="left", show_edge=False, pad_edge=False)
    for c in ("flow", "kind", "path", "start s", "stop s"):
        ft.add_column(c)
    for f in plan["flows"]:
        ft.add_row(f["name"], f["kind"], f"{f['src']} → {f['dst']}", f"{f['start']:g}", f"{f['stop']:g}")
    lt = Table(title="links", title_justify="left", show_edge=False, pad_edge=False)
    for c in ("link", "qdisc", "rate", "delay ms", "mtu", "overhead", "device queue"):
        lt.add_column(c)
    from aqmlab.result import _fmt_rate

    for link in plan["links"]:
        lt.add_row(link["name"], link["qdisc"], _fmt_rate(link["rate_bps"]), f"{link['delay'] * 1e3:g}", str(link["mtu"]), str(link["overhead"]), str(link["device_queue"]))
    con.print(ft)
    con.print(lt)


@cli.command("list", short_help="List qdiscs, congestion controls, workloads or studies.")
@click.argument("category", type=click.Choice(CATEGORIES), metavar="{" + "|".join(CATEGORIES) + "}")
@click.option("--verbose", "-v", is_flag=True, help="Add a one-line description after each name.")
def list_cmd(category: str, verbose: bool) -> None:
    """List the available queue disciplines, congestion controls, workloads or studies,
    one name per line.

    \b
    Examples:
      aqmlab list qdiscs
      aqmlab list workloads --verbose
    """
    if category == "studies":
        items = [(name, _study_about(path)) for name, path in find_studies().items()]
    else:
        import aqmlab

        items = aqmlab.kinds(category)
    width = max((len(n) for n, _ in items), default=0)
    for name, about in items:
        click.echo(f"{name:<{width}}  {about}" if verbose else name)


@cli.command("describe", short_help="Show a qdisc's or workload's parameters and defaults.")
@click.argument("kind")
def describe_cmd(kind: str) -> None:
    """Show the parameters of a queue discipline or workload, with defaults.

    \b
    Examples:
      aqmlab describe fifo
      aqmlab describe ping
    """
    import aqmlab

    d = aqmlab.describe(kind)
    click.echo(f"{d['kind']} ({d['category']}): {d['about']}")
    if not d["params"]:
        click.echo("no parameters")
        return
    click.echo("parameters (key = default):")
    for p in d["params"]:
        click.echo(f"  {p['name']} = {p['default']}")
        for line in textwrap.wrap(p["doc"], width=88):
            click.echo(f"      {line}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``aqmlab`` console script."""
    debug = bool(os.environ.get("AQMLAB_DEBUG"))
    try:
        rv: Any = cli.main(args=argv, prog_name="aqmlab", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        _fail(e.format_message() + hint, EXIT_BAD_INPUT)
    except click.ClickException as e:
        _fail(e.format_message(), e.exit_code)
    except (_Interrupted, click.Abort, KeyboardInterrupt):
        if sys.stderr.isatty():
            click.echo("", err=True)  # end the line that shows ^C
        _fail("interrupted", EXIT_INTERRUPTED)
    except ScenarioError as e:
        if debug:
            raise
        _fail(str(e), EXIT_BAD_INPUT)
    except SimulationError as e:
        if debug:
            raise
        _fail(str(e), EXIT_INTERNAL)
    except AqmlabError as e:
        if debug:
            raise
        _fail(str(e), EXIT_INTERNAL)
    except BrokenPipeError:
        # Output piped into a program that stopped reading (e.g. `| head`).
        sys.stderr.close()
        sys.exit(EXIT_INTERNAL)
    except Exception as e:  # a bug: one line unless debugging
        if debug:
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set AQMLAB_DEBUG=1 for a traceback)", EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()

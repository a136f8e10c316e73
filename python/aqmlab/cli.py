"""The ``aqmlab`` command.

Every command has ``--help`` with an example. Bad input exits with status 2 and one line
on stderr (``error: FIELD: what is wrong (line N)``), never a traceback; an internal
failure exits with status 1 (set ``AQMLAB_DEBUG=1`` to see the traceback).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import textwrap
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from aqmlab.engines import ENGINES, EngineUnavailable
from aqmlab.errors import AqmlabError, EnvironmentFailure, ScenarioError, SimulationError, StoreError, StudyError

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130

ENGINE_NAMES = list(ENGINES)

CATEGORIES = ("qdiscs", "cc", "workloads", "links", "studies", "measures", "columns")

#: Rows of the flow and link tables `aqmlab validate` prints (--json has all of them).
TABLE_ROWS = 200


def _fail(message: str, code: int) -> None:
    click.echo("error: " + " ".join(str(message).split()), err=True)
    sys.exit(code)


def _console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Wide enough for the summary tables when output goes to a file or a pipe.
    width = None if stream.isatty() else max(shutil.get_terminal_size((160, 24)).columns, 160)
    return Console(file=stream, width=width, highlight=False)


def _check_out_dir(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Makes sure, before any work starts, that `path` is a folder this process can write
    to: creates it (and its parents) and writes and removes a probe file there. Exits 2
    with one line (naming the option) otherwise."""
    import tempfile

    p = Path(path)
    probe = p
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        if probe == p:
            _fail(f"{option}: {p} is a file, not a folder", EXIT_BAD_INPUT)
        _fail(f"{option}: {p} cannot be created: {probe} is a file, not a folder", EXIT_BAD_INPUT)
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p, prefix=".aqmlab-probe-"):
            pass
    except OSError as e:
        _fail(f"{option}: cannot write to {p}: {e.strerror or e}", EXIT_BAD_INPUT)
    return p


def _check_scheduler(addr: str | None) -> Any:
    """Connects to the Dask scheduler `addr` before any work starts; a malformed address,
    a missing `dask` extra or an unreachable scheduler exits 2 with one line."""
    if addr is None:
        return None
    try:
        from dask.distributed import Client
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:
        _fail("--scheduler: needs the dask extra (pip install 'aqmlab[dask]')", EXIT_BAD_INPUT)
    try:
        scheme, loc = parse_address(addr, strict=False)
        if scheme in ("tcp", "tls"):
            parse_host_port(loc)
    except (ValueError, TypeError) as e:
        _fail(f"--scheduler: {addr!r} is not a scheduler address like tcp://host:8786 ({e})", EXIT_BAD_INPUT)
    try:
        return Client(addr, timeout=float(os.environ.get("AQMLAB_SCHEDULER_TIMEOUT", "10")))
    except (OSError, ValueError, TimeoutError) as e:
        _fail(f"--scheduler: cannot connect to {addr}: {' '.join(str(e).split())}", EXIT_BAD_INPUT)


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
@click.option(
    "--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version, help="Print the version and exit."
)
def cli() -> None:
    """aqmlab: simulate queue disciplines (AQM) on a bottleneck described in a TOML file."""


@cli.command("run", short_help="Run a scenario; print flow and queue tables, JSON or Parquet.")
@click.argument("file", metavar="FILE.toml")
@click.option("--seed", type=int, default=None, help="Run seed (default: the scenario's run.seed, 1).")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    default=None,
    help="Write Parquet tables, scenario.toml and meta.json to this directory.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (flows, queues, probes, events, wall_seconds) instead of tables."
)
@click.option("--all-queues", is_flag=True, help="Show idle links in the queue table too.")
@click.option("--all", "all_rows", is_flag=True, help="Print every row of the flow and queue tables (default: the first 50 of each).")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing on success (useful with --out).")
@click.option(
    "--engine",
    type=click.Choice(ENGINE_NAMES),
    default="sim",
    show_default=True,
    help="; ".join(f"{e.name}: {e.about}" + (f" (needs {e.setup})" if e.setup else "") for e in ENGINES.values()) + " (docs/engines.md).",
)
@click.option(
    "--force", is_flag=True, help="Run even if the estimated memory or events exceed the budget (run.max_memory, run.max_events)."
)
def run_cmd(
    file: str, seed: int | None, out: str | None, as_json: bool, all_queues: bool, all_rows: bool, quiet: bool, engine: str, force: bool
) -> None:
    """Run a scenario and print a summary of its flows and queues.

    \b
    Examples:
      aqmlab run examples/fifo_overload.toml
      aqmlab run examples/ping_rtts.toml --seed 7 --out results/ping
      aqmlab run examples/fifo_overload.toml --json | python -m json.tool
      aqmlab run examples/fq_codel_isolation.toml --engine linux
    """
    import aqmlab

    sc = aqmlab.load_scenario(Path(file), force=force)
    if out is not None:
        aqmlab.validate(sc, force=force, flow_rows=0)  # a bad scenario is reported before a bad --out
        _check_out_dir(out)
    if engine == "linux":
        _engine_ready(engine, sc)
        _run_linux(sc, seed, out, as_json, all_queues, quiet)
        return
    if engine != "sim":
        _engine_ready(engine, sc)
        _run_engine(engine, sc, seed, out, as_json, all_queues, quiet)
        return
    progress = None
    bar = None
    if not as_json and not quiet and sys.stderr.isatty():
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("simulating"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=_console(stderr=True),
            transient=True,
        )
        task = bar.add_task("run", total=1.0)

        def progress(frac: float) -> None:
            bar.update(task, completed=frac)

    if bar is not None:
        with bar:
            result = aqmlab.run(sc, seed=seed, progress=progress, force=force)
    else:
        result = aqmlab.run(sc, seed=seed, force=force)
    if out is not None:
        try:
            result.write_parquet(out)
        except OSError as e:
            _fail(f"--out: cannot write the results to {out}: {e.strerror or e}", EXIT_BAD_INPUT)
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
    elif not quiet:
        for w in result.warnings:
            click.echo(f"warning: {w}", err=True)
        _console().print(result.summary_table(all_queues=all_queues, max_rows=_table_rows()))
        if out is not None:
            click.echo(f"results written to {out}/")


def _table_rows() -> int | None:
    """Rows per summary table for `aqmlab run`: all with --all, else the first 50."""
    from aqmlab.result import SUMMARY_ROWS

    ctx = click.get_current_context(silent=True)
    return None if ctx is not None and ctx.params.get("all_rows") else SUMMARY_ROWS


def _finite(d: dict) -> dict:
    """NaN (a measure the guest could not take) becomes null in JSON."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in d.items()}


def _engine_ready(name: str, sc) -> None:
    """Exits 2 with one sentence when engine ``name`` is not installed or cannot express
    the scenario (before any process starts)."""
    eng = ENGINES[name]
    bad = eng.check(sc)
    if bad:
        _fail(bad[0] + (f" (and {len(bad) - 1} more unsupported key(s))" if len(bad) > 1 else ""), EXIT_BAD_INPUT)
    msg = eng.available()
    if msg is not None:
        _fail(msg, EXIT_BAD_INPUT)


def _run_engine(name: str, sc, seed: int | None, out: str | None, as_json: bool, all_queues: bool, quiet: bool) -> None:
    say = (lambda m: None) if (as_json or quiet) else (lambda m: click.echo(m, err=True))
    result = ENGINES[name].run(sc, seed, log=say)
    if _show_engine_result(result, out, as_json, all_queues, quiet):
        i = result.engine_info
        click.echo(f"{name} engine: {i.get('version', '')} in {i.get('wall_seconds', float('nan')):.1f} s wall".replace("  ", " "))


def _show_engine_result(result, out: str | None, as_json: bool, all_queues: bool, quiet: bool) -> bool:
    """Writes an engine's result to ``out`` and prints it (JSON, or its warnings and the
    summary table); True when the caller should add its footer line."""
    if out is not None:
        result.write_parquet(out)
    if as_json:
        d = result.to_json_dict()
        d["engine"] = _finite(result.engine_info)
        sys.stdout.write(json.dumps(d, allow_nan=False, default=lambda v: None) + "\n")
        return False
    if quiet:
        return False
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    _console().print(result.summary_table(all_queues=all_queues, max_rows=_table_rows()))
    return True


@contextlib.contextmanager
def _vm_progress(show: bool) -> Iterator[tuple[Callable[[str], None], Callable[[float, float], None] | None]]:
    """``(log, progress)`` for a Linux engine run: the engine's messages and the virtual
    seconds the VM has reached (a TCG run takes minutes). On a terminal a transient rich
    progress line on stderr; otherwise one stderr line per tenth of the run; nothing at all
    when ``show`` is false (--quiet, --json)."""
    if not show:
        yield (lambda m: None), None
        return
    t0 = time.monotonic()

    def phase(reached: float, length: float) -> str:
        return "linux VM: collecting results" if reached >= length else "linux VM: running"

    if sys.stderr.isatty():
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[virtual]}"),
            TimeElapsedColumn(),
            console=_console(stderr=True),
            transient=True,
        )
        task = bar.add_task("linux VM: booting", total=None, virtual="")

        def update(reached: float, length: float) -> None:
            shown = min(reached, length)
            bar.update(
                task, description=phase(reached, length), total=length, completed=shown, virtual=f"{shown:.0f} of {length:g} s virtual"
            )

        with bar:
            yield bar.console.print, update
        return
    step = [-1]

    def line(reached: float, length: float) -> None:
        tenth = min(10, int(10 * reached / length)) if length > 0 else 10
        if tenth > step[0]:
            step[0] = tenth
            click.echo(
                f"{phase(reached, length)}: {min(reached, length):.1f} of {length:g} s virtual after {time.monotonic() - t0:.0f} s wall",
                err=True,
            )

    yield (lambda m: click.echo(m, err=True)), line


def _run_linux(sc, seed: int | None, out: str | None, as_json: bool, all_queues: bool, quiet: bool) -> None:
    from aqmlab.linux.engine import run_linux

    with _vm_progress(not (as_json or quiet)) as (say, progress):
        result = run_linux(sc, seed, log=say, progress=progress)
    if not _show_engine_result(result, out, as_json, all_queues, quiet):
        return
    i = result.engine_info
    click.echo(f"linux engine: kernel {i['kernel']}, {i['virtual_seconds']:.1f} s virtual in {i['wall_seconds']:.1f} s wall "
               f"(emulation overhead ×{i['overhead']:.1f}); guest CPU busy {i['cpu_busy_mean']:.0%} mean, {i['cpu_busy_max']:.0%} peak")


@cli.command(
    "crosscheck",
    short_help="Run a scenario (or the shipped validation campaign) on the simulator and on reference engines "
    "(Linux, ns-2, ns-3); compare.",
)
@click.argument("file", metavar="[FILE.toml]", required=False)
@click.option(
    "--engines",
    "engine_list",
    default=None,
    metavar="LIST",
    help="Comma-separated engines to compare with: "
    + ", ".join(e for e in ENGINES if e != "sim")
    + " (default: every installed engine that supports the file; with --campaign: ns3,ns2 for quick, linux,ns3,ns2 for full).",
)
@click.option("--seed", type=int, default=None, help="Run seed of the simulator (and start times of every engine).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison rows as JSON.")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    default=None,
    help="Write every result as Parquet to OUT/sim, OUT/ENGINE and, with engines other than linux alone, the figures OUT/sojourn_cdf.png "
         "and OUT/goodput.png. With --campaign (required): the campaign's folder.",
)
@click.option(
    "--keep",
    "keep",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep each engine's job (VM script and guest output; ns-2 Tcl and traces) in this directory (KEEP/ENGINE when several engines "
         "run).",
)
@click.option(
    "--campaign",
    "campaign",
    type=click.Choice(["quick", "full"]),
    default=None,
    help="Run the shipped validation campaign instead of FILE: quick (a subset of the cases, 20 s runs, seed 1, without the kernel unless "
         "--engines names linux; under 15 minutes on 2 cores) or full (every case as written, seeds 1-3, the kernel included).",
)
@click.option("--case", "only_cases", multiple=True, metavar="NAME", help="With --campaign: only this case (repeat for several).")
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, help="With --campaign: local worker processes (default: all cores)."
)
@click.option(
    "--scheduler", default=None, metavar="ADDR", help="With --campaign: run on a Dask cluster, e.g. tcp://host:8786 (needs the dask extra)."
)
def crosscheck_cmd(
    file: str | None,
    engine_list: str | None,
    seed: int | None,
    as_json: bool,
    out: str | None,
    keep: str | None,
    campaign: str | None,
    only_cases: tuple[str, ...],
    jobs: int | None,
    scheduler: str | None,
) -> None:
    """Run a scenario on the simulator and on reference engines and print one table:
    per-queue utilisation, sojourn mean/p99, drop rate, drops and marks by reason,
    per-flow goodput and shares, probe RTTs; per engine its value, ratio to the simulator
    and verdict. Utilisation must agree within 2 points; mean sojourn, induced latency and
    drop rate within the engine's tolerance (linux ±10 %, ns3 ±15 %, ns2 ±5 %: "ok"; the
    kernel's rows within ±25 % but outside ±10 % are "close", not a pass). Each
    engine is judged against its simulator twin, the simulator with the stack that models
    it: the file as it is for linux and ns3; for ns2 the file with stack ns2-sack1, RED
    variant ns2 and the [tcp] keys ns-2's agents cannot express left to that profile (each
    change printed; per-flow keys are never changed). An engine
    that cannot express a key of the file is refused before anything runs (with --engines)
    or left out (by default). Exit status 0 whatever the verdict.

    With linux alone, when the kernel's iperf3 tests began more than 0.25 s late (their
    start-up crosses the bottleneck), the start-up rows are repeated for the simulator
    started at the kernel's instants ("sim at the kernel's starts").

    With --campaign quick|full (and no FILE), run the shipped validation campaign: its
    cases (the kernel campaign's dumbbells, RRUL, CAKE and BBR, and ns-3 and ns-2 cases
    varying congestion control, RTT, rate, asymmetry, ECN, mixed RTTs and probes), each on
    every selected engine that is installed and accepts it, in parallel (--jobs or
    --scheduler). OUT gets report.html (the verdict matrix case × engine: agree / differ
    with the worst ratio / failed / unsupported / not installed; per-case tables and
    figures), results.csv and matrix.md. Finished cells are kept in OUT and not run again;
    a failed cell runs again. Quick mode leaves the kernel out by default (a kernel run
    takes minutes under emulation).

    \b
    Examples:
      aqmlab crosscheck benchmarks/scenarios/tcp16_codel.toml
      aqmlab crosscheck examples/fifo_overload.toml --engines ns2 --out results/xc
      aqmlab crosscheck --campaign quick --out results/validation
      aqmlab crosscheck --campaign full --engines linux,ns3,ns2 --jobs 2 --out results/validation-full
    """
    import aqmlab

    if campaign is not None:
        if file is not None:
            _fail("--campaign runs the shipped cases: give no FILE", EXIT_BAD_INPUT)
        for flag, given in (("--seed", seed is not None), ("--json", as_json), ("--keep", keep is not None)):
            if given:
                _fail(f"{flag} does not apply to --campaign (the campaign sets the seeds and writes its own files)", EXIT_BAD_INPUT)
        _campaign(campaign, engine_list, out, list(only_cases), jobs, scheduler)
        return
    for flag, given in (("--case", bool(only_cases)), ("--jobs", jobs is not None), ("--scheduler", scheduler is not None)):
        if given:
            _fail(f"{flag} applies only with --campaign", EXIT_BAD_INPUT)
    if file is None:
        _fail("give a scenario FILE.toml or --campaign quick|full", EXIT_BAD_INPUT)
        return
    sc = aqmlab.load_scenario(Path(file))
    names = _crosscheck_engines(sc, engine_list)
    if out is not None:
        _check_out_dir(out)
    if names != ["linux"]:
        _crosscheck_multi(sc, names, seed, as_json, out, keep)
        return
    _crosscheck_linux(sc, seed, as_json, out, keep)


def _campaign(mode: str, engine_list: str | None, out: str | None, only: list[str], jobs: int | None, scheduler: str | None) -> None:
    from aqmlab.campaign import DEFAULT_ENGINES, load_cases, run_campaign

    others = [e for e in ENGINES if e != "sim"]
    if out is None:
        _fail("--campaign needs --out DIR (the cells, report.html, results.csv and matrix.md go there)", EXIT_BAD_INPUT)
        return
    if jobs is not None and scheduler is not None:
        _fail("give --jobs or --scheduler, not both", EXIT_BAD_INPUT)
    if engine_list is None:
        names = list(DEFAULT_ENGINES[mode])
    else:
        names = list(dict.fromkeys(n.strip() for n in engine_list.split(",") if n.strip()))
        if not names:
            _fail(f"--engines: give one or more of {', '.join(others)}", EXIT_BAD_INPUT)
        for n in names:
            if n not in others:
                _fail(f"--engines: unknown engine {n!r}; allowed: {', '.join(others)}", EXIT_BAD_INPUT)
    try:
        load_cases(mode, only or None)
    except ValueError as e:
        _fail(f"--case: {e}", EXIT_BAD_INPUT)
    _check_out_dir(out)
    client = _check_scheduler(scheduler)
    try:
        s = run_campaign(mode, out, names, jobs=jobs, scheduler=client, cases=only or None, say=lambda m: click.echo(m, err=True))
    finally:
        if client is not None:
            client.close()
    click.echo(f"{s.ran} cells run, {s.skipped} kept from before, {len(s.failed)} failed, in {s.wall_seconds:.0f} s")
    click.echo(f"report: {s.report}  (and {Path(out) / 'results.csv'}, {Path(out) / 'matrix.md'})")


def _crosscheck_engines(sc, engine_list: str | None) -> list[str]:
    """The engines to compare with; exits 2 (before anything runs) on an unknown name, an
    engine that cannot express the scenario (its simulator twin's, :func:`aqmlab.crosscheck.twin`)
    or is not installed, or when by default no engine can run it."""
    import aqmlab
    from aqmlab.crosscheck import twin

    sc.validate()
    others = [e for e in ENGINES if e != "sim"]

    def doc(n: str):
        return aqmlab.load_scenario(twin(n, sc).doc)

    if engine_list is not None:
        names = [n.strip() for n in engine_list.split(",") if n.strip()]
        if not names:
            _fail(f"--engines: give one or more of {', '.join(others)}", EXIT_BAD_INPUT)
        for n in names:
            if n not in others:
                _fail(f"--engines: unknown engine {n!r}; allowed: {', '.join(others)}", EXIT_BAD_INPUT)
        for n in dict.fromkeys(names):
            _engine_ready(n, doc(n))
        return list(dict.fromkeys(names))
    ok, why = [], []
    for n in others:
        bad = ENGINES[n].check(doc(n))
        msg = bad[0] if bad else ENGINES[n].available()
        if msg is None:
            ok.append(n)
        else:
            why.append(msg)
    if not ok:
        _fail("; ".join(why) + " (no engine can run this file)", EXIT_BAD_INPUT)
    return ok


def _crosscheck_multi(sc, names: list[str], seed: int | None, as_json: bool, out: str | None, keep: str | None) -> None:
    import aqmlab
    from aqmlab.crosscheck import CLOSE_TOL, REL_TOL, compare_engines, figures, render, status, to_json, twin, verdicts
    from aqmlab.linux.crosscheck import run_sim

    say = (lambda m: None) if as_json else (lambda m: click.echo(m, err=True))
    # each engine against the simulator running the stack that models it: one simulator
    # run per distinct twin
    twins = {n: twin(n, sc) for n in names}
    by_key: dict[str, Any] = {}
    sims: dict[str, Any] = {}
    for n in names:
        k = twins[n].key()
        if k not in by_key:
            by_key[k] = run_sim(twins[n].doc, seed=seed)
        sims[n] = by_key[k]
    sim = sims[names[0]]
    for n in names:
        for c in twins[n].changes:
            say(f"{n} and its simulator twin: {c}")
    results: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for n in names:
        kw: dict[str, Any] = {"log": say}
        if keep is not None:
            kw["keep"] = str(Path(keep) / n) if len(names) > 1 else keep
        doc = aqmlab.load_scenario(twins[n].doc)
        try:
            if n == "linux":  # minutes of TCG: show the virtual seconds reached
                with _vm_progress(not as_json) as (kw["log"], progress):
                    results[n] = ENGINES[n].run(doc, seed, progress=progress, **kw)
            else:
                results[n] = ENGINES[n].run(doc, seed, **kw)
        except ScenarioError:
            raise
        except (AqmlabError, OSError) as e:
            # a crashed engine fails alone; the others are still compared
            failed[n] = " ".join(str(e).split())
            say(f"{n} engine failed: {failed[n]}")
    rows = compare_engines(sim, results, sims)
    ran = list(results)
    agree = verdicts(rows, ran)
    stacks = {n: twins[n].stack for n in names}
    if out is not None:
        sim.write_parquet(Path(out) / "sim")
        for n in names:
            if sims[n] is not sim:  # another twin: OUT/sim-ENGINE
                sims[n].write_parquet(Path(out) / f"sim-{n}")
        for n, r in results.items():
            r.write_parquet(Path(out) / n)
        other = {f"sim ({stacks[n]})": sims[n] for n in names if sims[n] is not sim}
        figs = figures(sim, results, out, title=sc.name, sim_label=f"sim ({stacks[names[0]]})" if other else "sim", twins=other)
    if as_json:
        eng = {
            n: {
                "agree": agree.get(n),
                "status": status(rows, n) if n in results else "failed",
                "error": failed.get(n),
                "info": _finite(results[n].engine_info) if n in results else None,
                "warnings": results[n].warnings if n in results else [],
                "twin": {"stack": stacks[n], "changes": twins[n].changes},
            }
            for n in names
        }
        sys.stdout.write(
            json.dumps({"scenario": sc.name, "engines": eng, "rows": to_json(rows)}, allow_nan=False, default=lambda v: None) + "\n"
        )
        return
    for r in results.values():
        for w in r.warnings:
            click.echo(f"warning: {w}", err=True)
    twin_note = "; ".join(f"{n}: stack {stacks[n]}" for n in ran)
    _console().print(
        render(
            rows,
            ran,
            title=f"{sc.name}: simulator vs {', '.join(ran) or 'no engine'} (each against the simulator twin running {twin_note})"
            if ran
            else f"{sc.name}: no engine ran",
            twins=stacks,
        )
    )
    for n in names:
        if n in failed:
            click.echo(f"{n}: FAILED: {failed[n]}")
        else:
            i = results[n].engine_info
            wall = i.get("wall_seconds")
            st = status(rows, n)
            what = {
                "agree": "all criteria agree",
                "differ": "some rows DIFFER",
                "close": f"no row DIFFERS, some are only close (within ±{CLOSE_TOL.get(n, 0) * 100:.0f} %, outside the goal of "
                         f"±{REL_TOL.get(n, 0) * 100:.0f} %)",
            }[st]
            click.echo(f"{n}: {what}" + (f" ({wall:.1f} s wall)" if isinstance(wall, float) else ""))
    if out is not None:
        click.echo(f"results and figures ({', '.join(p.name for p in figs)}) written to {out}/")


def _crosscheck_linux(sc, seed: int | None, as_json: bool, out: str | None, keep: str | None) -> None:
    from aqmlab.linux.crosscheck import CLOSE_TOL, compare, kernel_start_rows, render, run_sim, to_json, verdict, with_kernel_starts
    from aqmlab.linux.engine import START_LAG_NOTE, run_linux
    from aqmlab.linux.translate import translate

    translate(sc.to_dict(), sc.validate())  # an unsupported key fails here, before any run
    sim = run_sim(sc, seed=seed)
    with _vm_progress(not as_json) as (say, progress):
        lin = run_linux(sc, seed, log=say, keep=keep, progress=progress)
    if out is not None:
        sim.write_parquet(Path(out) / "sim")
        lin.write_parquet(Path(out) / "linux")
    rows = compare(sim, lin, close_tol=CLOSE_TOL)
    lag = lin.engine_info.get("start_lag") or {}
    if lag.get("max", 0.0) > START_LAG_NOTE:
        # the kernel's tests began late (iperf3's start-up through a congested
        # bottleneck): also show the start-up rows of the simulator at those instants
        doc = with_kernel_starts(sc, seed, lag.get("flows", {}))
        if doc is not None:
            rows += kernel_start_rows(run_sim(doc, seed=seed), lin)
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "scenario": sc.name,
                    "agree": verdict(rows),
                    "engine": _finite(lin.engine_info),
                    "warnings": lin.warnings,
                    "rows": to_json(rows),
                },
                allow_nan=False,
                default=lambda v: None,
            )
            + "\n"
        )
        return
    for w in lin.warnings:
        click.echo(f"warning: {w}", err=True)
    _console().print(render(rows, title=f"{sc.name}: simulator vs Linux {lin.engine_info['kernel']}"))
    i = lin.engine_info
    st = (
        "all criteria agree"
        if verdict(rows)
        else "some rows DIFFER"
        if any(r.verdict == "DIFF" for r in rows)
        else "no row DIFFERS, some are only close (within ±25 %, outside the goal of ±10 %)"
    )
    click.echo(
        f"{st}; linux engine: {i['virtual_seconds']:.1f} s virtual in "
        f"{i['wall_seconds']:.1f} s wall (×{i['overhead']:.1f}), guest CPU busy {i['cpu_busy_mean']:.0%} mean, {i['cpu_busy_max']:.0%} peak"
    )


@cli.command("setup", short_help="Install a reference engine (ns2, ns3 or linux) with the script aqmlab ships.")
@click.argument("engine", type=click.Choice([e for e in ENGINES if e != "sim"]))
@click.option("--print-path", is_flag=True, help="Print the path of the engine's setup script instead of running it.")
def setup_cmd(engine: str, print_path: bool) -> None:
    """Install ENGINE once: ns2 (Debian's ns2 package, apt-get), ns3 (the ns3 3.44 wheel
    from PyPI in a venv under ~/.cache/aqmlab/ns3, and the engine's C++ program compiled
    against it with g++) or linux (Debian packages with apt-get, then the VM image under
    ~/.cache/aqmlab/vm). apt-get needs root (or sudo). Runs the bash script that ships
    inside the aqmlab package (--print-path shows where); running it again only checks.

    \b
    Examples:
      aqmlab setup ns2
      aqmlab setup linux
    """
    import subprocess

    from aqmlab.engines import setup_script

    script = setup_script(engine)
    if not script.is_file():
        _fail(f"the setup script of the {engine} engine is missing from this aqmlab installation ({script})", EXIT_BAD_INPUT)
    if print_path:
        click.echo(str(script))
        return
    if shutil.which("bash") is None:
        _fail(f"bash not found: the {engine} engine's setup script ({script}) needs it", EXIT_BAD_INPUT)
    # the VM image is assembled by this Python's aqmlab (python -m aqmlab.linux.vm)
    env = dict(os.environ, AQMLAB_PYTHON=sys.executable)
    rc = subprocess.call(["bash", str(script)], env=env)
    if rc != 0:
        _fail(f"the {engine} engine's setup failed (exit status {rc}; its messages are above)", 1)
    still = ENGINES[engine].available()
    if still is not None:
        _fail(f"the {engine} engine's setup finished but the engine is not usable: {still}", 1)
    click.echo(f"{engine} engine: installed")


@cli.command("validate", short_help="Check a scenario without running it.")
@click.argument("file", metavar="FILE.toml")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved nodes, links and flows as JSON.")
@click.option("--force", is_flag=True, help="Accept a scenario whose estimated memory or events exceed the budget.")
def validate_cmd(file: str, as_json: bool, force: bool) -> None:
    """Check a scenario without running it and show what it resolves to.

    \b
    Example:
      aqmlab validate examples/ping_rtts.toml
    """
    import aqmlab

    plan = aqmlab.validate(Path(file), force=force, flow_rows=None if as_json else TABLE_ROWS)
    if as_json:
        sys.stdout.write(json.dumps(plan) + "\n")
        return
    from rich.table import Table

    con = _console()
    name = plan.get("name") or Path(file).stem
    def n(k: int, what: str) -> str:
        return f"{k} {what}" if k == 1 else f"{k} {what}s"

    con.print(
        f"ok: {name}: {n(len(plan['nodes']), 'node')}, {n(len(plan['links']), 'link')}, {n(plan['flows_total'], 'flow')}; "
        f"{plan['duration']:g} s, warm-up {plan['warmup']:g} s, bins {plan['bin']:g} s, seed {plan['seed']}"
    )
    est = plan["estimate"]
    con.print(
        f'estimated: {est["events"]:.3g} events, {est["memory_bytes"] / 1e6:.3g} MB of memory (see docs/scenario.md, "Resources")',
        markup=False,
    )
    for w in plan.get("warnings", []):
        con.print(f"warning: {w}", markup=False)
    ft = Table(title="flows", title_justify="left", show_edge=False, pad_edge=False)
    for c in ("flow", "kind", "path", "start s", "stop s"):
        ft.add_column(c)
    for f in plan["flows"][:TABLE_ROWS]:
        ft.add_row(f["name"], f["kind"], f"{f['src']} → {f['dst']}", f"{f['start']:g}", f"{f['stop']:g}")
    lt = Table(title="links", title_justify="left", show_edge=False, pad_edge=False)
    for c in ("link", "qdisc", "lower", "rate", "delay ms", "mtu", "overhead", "device queue"):
        lt.add_column(c)
    from aqmlab.result import fmt_rate

    for link in plan["links"][:TABLE_ROWS]:
        lt.add_row(
            link["name"],
            link["qdisc"],
            link.get("lower", "wire"),
            fmt_rate(link["rate_bps"]),
            f"{link['delay'] * 1e3:g}",
            str(link["mtu"]),
            str(link["overhead"]),
            str(link["device_queue"]),
        )
    con.print(ft)
    if plan["flows_total"] > TABLE_ROWS:
        con.print(f"… and {plan['flows_total'] - TABLE_ROWS} more flows (--json lists all)", markup=False)
    con.print(lt)
    if len(plan["links"]) > TABLE_ROWS:
        con.print(f"… and {len(plan['links']) - TABLE_ROWS} more links (--json lists all)", markup=False)


@cli.command("list", short_help="List qdiscs, congestion controls, workloads, link models, studies, measures or result columns.")
@click.argument("category", type=click.Choice(CATEGORIES), metavar="{" + "|".join(CATEGORIES) + "}")
@click.option("--verbose", "-v", is_flag=True, help="Add a one-line description after each name.")
def list_cmd(category: str, verbose: bool) -> None:
    """List the available queue disciplines, congestion controls, workloads, topology
    and link-model tables (links: [[link]], [dumbbell], shaper/htb/tbf, wifi, docsis),
    studies, the run-level measures a study's `measures` can name, or the columns of the
    flows and queues result tables (what flow:NAME.COL and queue:NAME.COL read), one name
    per line.

    \b
    Examples:
      aqmlab list qdiscs
      aqmlab list workloads --verbose
      aqmlab list links -v
      aqmlab list measures -v
      aqmlab list columns -v
    """
    if category == "studies":
        items = [(name, _study_about(path)) for name, path in find_studies().items()]
    elif category == "measures":
        from aqmlab import measures as M

        items = list(M.describe().items()) + [
            ("flow:NAME.COL", "a column of one flow's row (e.g. flow:voip0.r_value)"),
            ("queue:NAME.COL", "a column of one queue's row (e.g. queue:bottleneck_down.sojourn_p99)"),
            ("mean:KIND.COL", "mean of a column over the flows of a kind (e.g. mean:web.page_time_mean)"),
            ("sum:KIND.COL", "sum of a column over the flows of a kind"),
            ("ratio:A/B", "summed goodput of the flows named A* over that of B* (e.g. ratio:prague/cubic)"),
            ("induced:SUFFIX", "induced latency of the latency probes named *.SUFFIX (e.g. induced:udp_ef)"),
            ("induced_ratio:A/B", "induced:A over induced:B (below 1 when A is served ahead of B)"),
        ]
    elif category == "columns":
        from aqmlab import schema

        items = schema.column_docs()
    else:
        import aqmlab

        items = aqmlab.kinds(category)
    width = max((len(n) for n, _ in items), default=0)
    for name, about in items:
        click.echo(f"{name:<{width}}  {about}" if verbose else name)


@cli.command("describe", short_help="Show the parameters and defaults of a qdisc, workload, link model or tcp.")
@click.argument("kind")
def describe_cmd(kind: str) -> None:
    """Show the parameters of a queue discipline, workload or topology/link-model table
    (`aqmlab list links`), with defaults; `tcp` shows the [tcp] keys and the TCP stack
    profiles.

    \b
    Examples:
      aqmlab describe fifo
      aqmlab describe ping
      aqmlab describe htb
      aqmlab describe wifi
      aqmlab describe tcp
    """
    import aqmlab

    d = aqmlab.describe(kind)
    head = textwrap.wrap(f"{d['kind']} ({d['category']}): {d['about']}", width=92)
    click.echo("\n".join(head[:1] + ["    " + line for line in head[1:]]))
    if d["category"] == "cc":
        click.echo(f"settings: keys of the [tcp] table (cc = \"{d['kind']}\"); see aqmlab describe tcp")
        return
    if d.get("profiles"):
        click.echo("stack profiles (stack = NAME):")
        for name, about in d["profiles"]:
            click.echo(f"  {name}")
            for line in textwrap.wrap(about, width=88):
                click.echo(f"      {line}")
    if not d["params"]:
        click.echo("no parameters")
        return
    click.echo("parameters (key = default):")
    for p in d["params"]:
        click.echo(f"  {p['name']} = {p['default']}")
        for line in textwrap.wrap(p["doc"], width=88):
            click.echo(f"      {line}")


# -- the lab: studies, sweeps, figures, reports, Flent export ---------------------------------


def _study_error(e: Exception) -> None:
    """Exits 2 with the study error; a list of problems keeps one problem per line."""
    first, *rest = str(e).split("\n")
    if rest:
        click.echo("error: " + " ".join(first.split()), err=True)
        for line in rest:
            click.echo("  " + " ".join(line.split()), err=True)
        sys.exit(EXIT_BAD_INPUT)
    _fail(str(e), EXIT_BAD_INPUT)


def _sweep(
    target: str, quick: bool, jobs: int | None, scheduler: str | None, out: str | None, only: tuple[str, ...], outputs: bool
) -> None:
    from aqmlab import report as rep
    from aqmlab.runner import StoreMismatch, run_study
    from aqmlab.study import StudyError, find_study, load_study

    env_dirs = [str(d) for d in _study_dirs() if d.is_dir()]
    if env_dirs and not target.endswith(".toml"):
        known = find_studies()
        if target in known:
            target = str(known[target])
    try:
        find_study(target)
        study = load_study(target, quick=quick)
        rep.validate_outputs(study)
    except StudyError as e:
        _study_error(e)
        return
    if only:
        names = [e.name for e in study.experiments]
        bad = [o for o in only if o not in names]
        if bad:
            _fail(f"--only: unknown experiment(s) {bad} (this study has: {', '.join(names)})", EXIT_BAD_INPUT)
    out_dir = Path(out) if out else Path("results") / (study.name + ("-quick" if quick else ""))
    fresh = not out_dir.exists()
    _check_out_dir(out_dir)
    client = _check_scheduler(scheduler)
    con = _console(stderr=True)
    full = study
    study = study.restricted(list(only))  # header, tables and findings printed: these experiments alone
    runs = study.runs()
    con.print(
        f"[bold]{study.title}[/bold]: {len(runs)} runs in {len(study.experiments)} experiment(s) → {out_dir}"
        + (f" ({study.quick_note})" if quick else "")
    )
    try:
        summary = run_study(study, out_dir, jobs=jobs, scheduler=client, only=list(only) or None, progress=True)
    except StoreMismatch as e:
        _fail(str(e), EXIT_BAD_INPUT)
        return
    except StudyError:
        # a scenario of the study is refused before any run: leave no empty store folder
        if fresh:
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # only if still empty
        raise
    except KeyboardInterrupt:
        _fail(_interrupted_sweep(out_dir, runs), EXIT_INTERRUPTED)
        return
    finally:
        if client is not None:
            client.close()
    if summary.repaired:
        con.print(f"[yellow]{len(summary.repaired)} finished run(s) were damaged on disk (checksum mismatch) and were run again; "
                  "see provenance.json and the report[/yellow]")
    con.print(f"runs: {summary.ran} simulated, {summary.skipped} already in the store; wall {summary.wall_seconds:.1f} s")
    if summary.failed:
        for rid in summary.failed:
            con.print(f"failed: {rid} (scenario and error in {out_dir / 'failed' / rid}.toml/.json)", markup=False)
    st = _open_store(out_dir)  # one reader for the warning, the headline numbers and the report
    _warn_identical(st, study, con)
    if outputs and not summary.failed:
        _print_numbers(st, study)
        page = rep.write_report(st, _report_study(full, study, st, bool(only)), jobs=jobs)
        con.print(f"report: {page}")
    elif not summary.failed:
        con.print(f"next: aqmlab report {out_dir} (tables, figures and findings in one HTML page), aqmlab plot {out_dir} "
                  f"(figure and table files), or aqmlab.load({str(out_dir)!r}) in Python", markup=False)
    if summary.failed:
        _fail(
            f"{len(summary.failed)} run(s) failed (see {out_dir / 'failed'}/); the other runs are stored, and rerunning retries the "
            "failed ones",
            EXIT_INTERNAL,
        )


def _interrupted_sweep(out_dir: Path, runs: list) -> str:
    """What an interrupted sweep leaves: how many of its runs the store holds, and how to
    go on (the same command resumes; finished runs are not run again)."""
    from aqmlab.store.meta import finished_runs

    try:
        done = len(finished_runs(out_dir) & {r.run_id for r in runs})
        kept = f"{done} of {len(runs)} runs are stored in {out_dir}"
    except Exception:  # noqa: BLE001 - the store unreadable mid-write: say what is certain
        kept = f"the finished runs are stored in {out_dir}"
    return f"interrupted: {kept}; run the same command again to resume (finished runs are not run again)"


def _report_study(full: Any, ran: Any, st: Any, only: bool) -> Any:
    """The study the report covers: after `--only` on a store that also holds other
    experiments' runs, every experiment with runs in the store (the report is the
    store's, merged, not replaced by one experiment's); else the study that ran."""
    if not only:
        return ran
    from aqmlab.store import runs_of

    try:
        present = set(runs_of(st)["experiment"].astype(str))
    except Exception:  # noqa: BLE001 - an unreadable store: report what ran
        return ran
    names = {e.name for e in ran.experiments}
    whole = full.without([e.name for e in full.experiments if e.name not in present and e.name not in names])
    return whole if len(whole.experiments) > len(ran.experiments) else ran


def _open_store(out_dir: Path) -> Any:
    """The store at `out_dir` (read lazily), or the path itself if it cannot be opened
    (the step that reads it then reports why)."""
    from aqmlab.store import load

    try:
        return load(out_dir)
    except Exception:  # noqa: BLE001 - reported by the step that needs it
        return out_dir


def _warn_identical(out_dir: Any, study, con) -> None:
    """Warns about experiments whose repetitions all came out identical (`out_dir`: a
    store directory or an opened store)."""
    from aqmlab.report import identical_runs
    from aqmlab.store import load

    try:
        found = identical_runs(out_dir if not isinstance(out_dir, (str, os.PathLike)) else load(out_dir), study)
    except Exception:  # a store that cannot be read is reported by the next step
        return
    for w in found:
        con.print(f"[yellow]warning: {w.message}[/yellow]")


def _print_numbers(out_dir: Any, study) -> None:
    """The headline numbers of a finished sweep: each experiment's first table and the
    findings with what this run shows (the report has everything). `out_dir`: a store
    directory or an opened store."""
    from rich.table import Table as RichTable

    from aqmlab import findings, tables
    from aqmlab.store import load

    st = load(out_dir) if isinstance(out_dir, (str, os.PathLike)) else out_dir
    con = _console()
    for e in study.experiments:
        if not e.tables:
            continue
        try:
            t = tables.table(st, e.tables[0], e)
        except Exception:  # a table that cannot be computed is shown in the report instead
            continue
        rt = RichTable(title=t.title, title_justify="left")
        rt.add_column(t.cells.index.name or "")
        for c in t.cells.columns:
            rt.add_column(str(c), justify="right")
        for idx, row in t.cells.iterrows():
            rt.add_row(str(idx), *[str(v) for v in row])
        con.print(rt)
        if t.note:
            # the note carries the unit when the columns are an axis ("values in ms"); a
            # line of its own, since a caption would wrap to the table's width
            con.print(t.note, style="dim", highlight=False)
    ev = findings.evaluate_all(st, study)
    if ev:
        con.print("[bold]Findings[/bold] (✓ shown by this run, ✗ not shown, – compare by eye in the report)")
        for e in ev:
            con.print(f" {e.symbol} {e.text}")


@cli.command("reproduce", short_help="Run one of the shipped studies end to end: runs, tables, figures, HTML report.")
@click.argument("study")
@click.option("--quick", is_flag=True, help="Shorter runs and fewer repetitions (a few minutes on 2 cores); the report says so.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Local worker processes (default: all cores).")
@click.option("--scheduler", default=None, metavar="ADDR", help="Run on a Dask cluster, e.g. tcp://host:8786 (needs the dask extra).")
@click.option(
    "--out", type=click.Path(file_okay=False), default=None, help="Result store folder (default: results/STUDY[-quick]). Rerunning resumes."
)
@click.option("--only", multiple=True, metavar="EXPERIMENT", help="Run only this experiment (repeatable).")
def reproduce_cmd(study: str, quick: bool, jobs: int | None, scheduler: str | None, out: str | None, only: tuple[str, ...]) -> None:
    """Run STUDY (see `aqmlab list studies`) and write its report.

    Shipped studies: residential, saturated-tcp, docsis-downstream, edge-router, l4s,
    sqm (docs/*-study.md and /studies). Optional experiments (variants such as
    residential's rrul-diffserv) run only when named with --only.

    Example: aqmlab reproduce residential --quick --jobs 2 --out results/res-quick
    """
    _sweep(study, quick, jobs, scheduler, out, only, outputs=True)


@cli.command("sweep", short_help="Run a study file (yours or shipped) into a resumable result store.")
@click.argument("study", metavar="STUDY_OR_FILE")
@click.option("--quick", is_flag=True, help="Use the study's [quick] settings.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Local worker processes (default: all cores).")
@click.option("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address, e.g. tcp://host:8786.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Result store folder (default: results/STUDY).")
@click.option("--only", multiple=True, metavar="EXPERIMENT", help="Run only this experiment (repeatable).")
@click.option("--report/--no-report", default=False, help="Also write the HTML report afterwards.")
def sweep_cmd(
    study: str, quick: bool, jobs: int | None, scheduler: str | None, out: str | None, only: tuple[str, ...], report: bool
) -> None:
    """Run every run of a study definition that is not yet in the store.

    Example: aqmlab sweep my-study.toml --jobs 4 --out results/mine
    """
    _sweep(study, quick, jobs, scheduler, out, only, outputs=report)


def _store_dir(path: str, run_ok: bool = False) -> Path:
    """`path` as a result store, or exit 2 saying what it is instead: missing, a file, or
    a folder that holds results one level down (`report runs` for `report runs/fifo`).
    `run_ok`: the command also takes an `aqmlab run --out` folder, and says so."""
    from aqmlab.plots.runview import is_run_dir

    d = Path(path)
    if (d / "runs").is_dir():
        return d
    if not d.exists():
        _fail(f"{d}: no such folder", EXIT_BAD_INPUT)
    if not d.is_dir():
        _fail(f"{d} is a file, not a folder: give a result store folder" + (" or an `aqmlab run --out` folder" if run_ok else ""),
              EXIT_BAD_INPUT)
    what = ("neither an aqmlab result store (no runs/ folder) nor an `aqmlab run --out` folder (no flows.parquet)" if run_ok
            else "not an aqmlab result store (no runs/ folder; create one with `aqmlab reproduce` or `aqmlab sweep`)")
    try:
        inner = sorted(str(c) for c in d.iterdir() if c.is_dir() and ((c / "runs").is_dir() or (run_ok and is_run_dir(c))))
    except OSError:
        inner = []
    hint = f"; it holds {len(inner)} such folder(s) one level down: give one, e.g. {inner[0]}" if inner else ""
    _fail(f"{d} is {what}{hint}", EXIT_BAD_INPUT)
    return d


@cli.command("report", short_help="Write the self-contained HTML report of a result store or of one run.")
@click.argument("store", metavar="DIR")
@click.option("--out", "out_html", type=click.Path(dir_okay=False), default=None, help="HTML file (default: DIR/report.html).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Processes drawing the figures (default: all cores).")
@click.option(
    "--format",
    "formats",
    type=click.Choice(["png", "svg", "pdf"]),
    multiple=True,
    help="Figure files written beside the page (repeat for several; default: png and svg; png is always written, the page embeds it).",
)
@click.option("--dpi", type=click.IntRange(min=20, max=1200), default=110, show_default=True, help="Resolution of the PNG figures.")
def report_cmd(store: str, out_html: str | None, jobs: int | None, formats: tuple[str, ...], dpi: int) -> None:
    """Tables, figures, parameters, provenance and findings of the study in DIR; for an
    `aqmlab run --out DIR` folder, that run's numbers, tables and figure over time.

    \b
    Examples:
      aqmlab report results/residential-quick
      aqmlab run examples/rrul_web.toml --out results/rrul && aqmlab report results/rrul
    """
    from aqmlab import report as rep
    from aqmlab.plots.runview import is_run_dir

    if is_run_dir(store):  # one `aqmlab run --out` result
        if out_html is not None:
            _check_out_dir(Path(out_html).parent, "--out")
        click.echo(str(rep.write_run_report(store, out_html, dpi=dpi)))
        return
    d = _store_dir(store, run_ok=True)
    if out_html is not None:
        _check_out_dir(Path(out_html).parent, "--out")
    page = rep.write_report(d, None, out_html, jobs=jobs, formats=formats or ("png", "svg"), dpi=dpi)
    click.echo(str(page))


@cli.command("plot", short_help="Render a result store's figures and tables, or one run's view over time.")
@click.argument("store", metavar="DIR")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Folder (default: DIR/figures).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Processes drawing the figures (default: all cores).")
@click.option("--format", "formats", type=click.Choice(["png", "svg", "pdf"]), multiple=True,
              help="Figure file format (repeat for several; default: png and svg).")
@click.option("--dpi", type=click.IntRange(min=20, max=1200), default=110, show_default=True, help="Resolution of PNG figures.")
def plot_cmd(store: str, out: str | None, jobs: int | None, formats: tuple[str, ...], dpi: int) -> None:
    """Render every figure and table the study defines; for an `aqmlab run --out DIR`
    folder, the run's goodput per flow, queueing delay and probe RTT (without probes,
    the VoIP packets' one-way delay) over time (one figure, run.FORMAT).

    \b
    Examples:
      aqmlab plot results/saturated-tcp-quick --out figs
      aqmlab run examples/rrul_web.toml --out results/rrul && aqmlab plot results/rrul
    """
    from aqmlab import plots, tables
    from aqmlab.store import load
    from aqmlab.study import parse_study

    if plots.runview.is_run_dir(store):
        outdir = _check_out_dir(Path(out) if out else Path(store) / "figures")
        fig = plots.plot_run(store)
        for fmt in formats or ("png", "svg"):
            path = outdir / f"run.{fmt}"
            fig.savefig(path, dpi=dpi)
            click.echo(str(path))
        return
    d = _store_dir(store, run_ok=True)
    st = load(d)
    study = parse_study(st.study_text, quick=bool(st.provenance.get("quick")))
    outdir = _check_out_dir(Path(out) if out else d / "figures")
    # the figures on worker processes, the tables here meanwhile
    job = plots.FigureJob(st, study, outdir, formats=formats or ("png", "svg"), dpi=dpi, jobs=jobs)
    try:
        table_paths = tables.render_tables(st, study, outdir)
        figs = job.result()
    finally:
        job.close()
    paths = [p for r in figs for p in r.files] + list(table_paths)
    for p in paths:
        click.echo(str(p))


@cli.command("compare", short_help="Overlay runs or result stores: RTT CDF, goodput, time series.")
@click.argument("sources", metavar="A B [C ...]", nargs=-1, required=True)
@click.option("--out", type=click.Path(dir_okay=False), default="compare.png", show_default=True,
              help="Figure file; its extension (.png, .svg, .pdf) picks the format.")
@click.option("--name", "names", multiple=True, help="Label of each source in order (default: its folder's name).")
@click.option("--dpi", type=click.IntRange(min=20, max=1200), default=110, show_default=True, help="Resolution of a PNG figure.")
def compare_cmd(sources: tuple[str, ...], out: str, names: tuple[str, ...], dpi: int) -> None:
    """Compare `aqmlab run --out` folders and/or result stores in one figure: the CDF
    of the latency probes' RTT (when no source has probes, of the VoIP packets' one-way
    delay), total TCP goodput per direction, total goodput and the busiest queue's delay
    over time, each source labelled by its name.

    \b
    Example:
      aqmlab run home.toml --out fifo && aqmlab run home-fq_codel.toml --out fq_codel
      aqmlab compare fifo fq_codel --out fifo-vs-fq_codel.png
    """
    from aqmlab.plots.render import FORMATS
    from aqmlab.plots.runview import plot_compare

    if len(sources) < 2:
        _fail("compare needs at least two runs or stores (A B [C ...])", EXIT_BAD_INPUT)
    if names and len(names) != len(sources):
        _fail(f"--name: {len(names)} name(s) for {len(sources)} sources; give one per source or none", EXIT_BAD_INPUT)
    for s in sources:
        p = Path(s)
        if not ((p / "flows.parquet").is_file() or (p / "runs").is_dir()):
            _fail(f"{s} is neither an `aqmlab run --out` folder (no flows.parquet) nor a result store (no runs/ folder)", EXIT_BAD_INPUT)
    path = Path(out)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        _fail(f"--out: the file's extension {path.suffix or '(none)'!r} is not a figure format (allowed: .png, .svg, .pdf)", EXIT_BAD_INPUT)
    _check_out_dir(path.parent if str(path.parent) else Path("."), "--out")
    fig = plot_compare(list(sources), list(names) or None)
    fig.savefig(path, dpi=dpi)
    click.echo(str(path))


@cli.command("export", short_help="Export runs for other tools (Flent).")
@click.argument("store", metavar="DIR")
@click.option(
    "--flent", "fmt", flag_value="flent", default=True, help="Flent data files, one *.flent.gz per RRUL/VoIP/web run (the default format)."
)
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Folder (default: DIR/flent).")
def export_cmd(store: str, fmt: str, out: str | None) -> None:
    """Write Flent data files of a study store (`aqmlab reproduce`/`sweep`) or of one
    `aqmlab run --out DIR` result. `flent -i FILE -f plot -o F.png` draws each test's
    default plot (all_scaled for rrul and rrul_be; totals_loss for voip-rrul and
    voip-1up; totals_delay for http-rrul; totals for http-1up, tcp_ndown and tcp_nup —
    downloads or uploads only, with a ping —; http_delay for http), `-p PLOT` instead of
    `-f plot` another one. Without `-p` or `-f plot` flent writes its text summary (also
    into F.png with `-o F.png`).

    \b
    The test of a run follows from its flows (client* hosts send upstream, server* hosts
    downstream; probes are ping and udp_rr flows):
      bulk up and down + probes      rrul_be (rrul for kind = "rrul")
        … + a voip / web flow        voip-rrul / http-rrul
      bulk down only + ping          tcp_ndown
      bulk up only + ping            tcp_nup
      voip (web) + one bulk upload   voip-1up (http-1up)
      voip (web) alone               voip (http)
    A study's experiment can name its test instead (flent = "tcp_nup"); other runs are
    skipped, and a `run --out` folder whose flows make no test is an error saying why.

    \b
    Examples:
      aqmlab export results/residential-quick --out flent-files
      aqmlab run examples/rrul_web.toml --out res && aqmlab export res
    """
    from aqmlab.flent import FLENT_PLOTS, export_flent, export_flent_run

    d = Path(store)
    target = Path(out) if out else d / "flent"
    if not (d / "runs").is_dir() and (d / "flows.parquet").is_file():
        import pandas as pd

        from aqmlab.flent import why_no_test

        f = pd.read_parquet(d / "flows.parquet", columns=["kind", "src"])
        why = why_no_test(f["kind"].astype(str).tolist(), f["src"].tolist())
        if why:
            _fail(f"{d}: no Flent test matches this run: {why} (`aqmlab export --help` lists the tests and their flows)",
                  EXIT_BAD_INPUT)
            return
    if (d / "runs").is_dir() or (d / "flows.parquet").exists():
        _check_out_dir(target)
    if (d / "runs").is_dir():
        paths = export_flent(d, target)
    elif (d / "flows.parquet").exists():
        paths = export_flent_run(d, target)
    else:
        _fail(f"{d} is neither a result store (no runs/ folder) nor an `aqmlab run --out` result (no flows.parquet)", EXIT_BAD_INPUT)
        return
    none = (" (no run of the store has flows that make a Flent test: tests are recognised from the flows' kinds and directions, "
            "client* hosts sending upstream and server* hosts downstream; a study's experiment can name its test: "
            "flent = \"tcp_nup\" …)")
    click.echo(f"{len(paths)} file(s) written" + (f" to {paths[0].parent}" if paths else none))
    import gzip

    first: dict[str, Path] = {}
    for p in paths:
        with gzip.open(p, "rt") as fh:
            first.setdefault(json.load(fh)["metadata"]["NAME"], p)
    for t, ex in sorted(first.items()):
        plot = FLENT_PLOTS.get(t, "all_scaled")
        click.echo(f"  {t}: flent -i {ex} -p {plot} -o {t}-{plot}.png")


#: what to do when the machine refuses an operation, by errno
_ENV_ADVICE = {
    "ENOSPC": "the disk is full; free space or choose another --out",
    "EDQUOT": "the disk quota is exhausted; free space or choose another --out",
    "EROFS": "the file system is read-only; choose another --out",
    "EACCES": "permission denied; fix the permissions or choose another path",
    "EPERM": "operation not permitted; fix the permissions or choose another path",
    "EIO": "an I/O error (a failing disk or a lost network mount); check the device",
    "ENOTDIR": "a part of the path is a file, not a folder; choose another path",
    "EISDIR": "a folder stands where a file was expected; choose another path",
    "ENAMETOOLONG": "the file name is too long; choose a shorter path",
    "EMFILE": "too many open files; raise the limit (ulimit -n)",
    "ENFILE": "too many open files on the system; retry later",
    "ENOMEM": "the system is out of memory; retry with fewer --jobs",
}


def _environment_failure(e: OSError) -> EnvironmentFailure | None:
    """An OSError the environment caused, as one sentence naming the path and what to
    do (None for other OSErrors: those are bugs)."""
    import errno

    name = errno.errorcode.get(e.errno or -1, "")
    advice = _ENV_ADVICE.get(name)
    if advice is None:
        return None
    where = f" {e.filename}" if e.filename is not None else ""
    return EnvironmentFailure(f"cannot access{where}: {e.strerror or name}: {advice}")


@cli.command("verify", short_help="Check a result store against its checksums; --repair fixes it.")
@click.argument("store", metavar="DIR")
@click.option(
    "--repair", is_flag=True, help="Rewrite damaged metadata, rebuild parts.json from the part files and run the damaged runs again."
)
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes for the reruns (default: all cores).")
def verify_cmd(store: str, repair: bool, jobs: int | None) -> None:
    """Check every file of the result store in DIR: the metadata (parts.json,
    provenance.json, study.toml, each kept in two copies) and every finished run's files
    against their SHA-256 checksums. Exits 0 if the store is intact, 2 if it is damaged
    (naming the runs). With --repair: damaged metadata is rewritten from its intact copy
    (parts.json is rebuilt from the part files if neither copy is intact), and damaged runs
    are run again from the study text kept in the store.

    \b
    Examples:
      aqmlab verify results/residential-quick
      aqmlab verify results/residential-quick --repair
    """
    from aqmlab import store as S

    d = _store_dir(store)
    if repair:
        from aqmlab.runner import repair_store

        rep = repair_store(d, jobs=jobs, progress=sys.stderr.isatty())
        for a in rep.actions:
            click.echo(f"repaired: {a}")
        for dmg in rep.damaged:
            click.echo(f"damaged: run {dmg.run_id} ({dmg.file}: {dmg.reason})")
        if rep.failed:
            _fail(f"{len(rep.failed)} damaged run(s) failed when run again (see {d / 'failed'}/)", EXIT_INTERNAL)
        click.echo(f"ok: {d}: {len(rep.rerun)} damaged run(s) run again" if rep.rerun or rep.actions else f"ok: {d}: intact")
        return
    problems, n_runs = S.check_store(d)
    if problems:
        for p in problems:
            click.echo(f"damaged: {p}", err=True)
        _fail(f"{d} is damaged ({len(problems)} problem(s)); run `aqmlab verify {d} --repair` to repair it", EXIT_BAD_INPUT)
    click.echo(f"ok: {d}: {n_runs} finished runs, every file intact")


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
    except (ScenarioError, StudyError, StoreError, EnvironmentFailure) as e:
        if debug:
            raise
        if isinstance(e, ScenarioError) and e.field in ("study", "experiment", "base", "quick") and "unknown field" in e.message:
            _fail("this is a study file ([study] and [[experiment]] tables), not a scenario: run it with `aqmlab sweep FILE` "
                  "(docs/study.md)", EXIT_BAD_INPUT)
        _fail(str(e), EXIT_BAD_INPUT)
    except BrokenPipeError:
        # Output piped into a program that stopped reading (e.g. `| head`).
        sys.stderr.close()
        sys.exit(EXIT_INTERNAL)
    except OSError as e:
        if debug or _environment_failure(e) is None:
            if debug:
                raise
            _fail(f"internal error: {type(e).__name__}: {e} (set AQMLAB_DEBUG=1 for a traceback)", EXIT_INTERNAL)
        _fail(str(_environment_failure(e)), EXIT_BAD_INPUT)
    except UnicodeEncodeError as e:
        if debug:
            raise
        _fail(f"cannot encode {e.object[e.start:e.end]!r} ({e.reason}): a file name or argument holds bytes that are not "
              "valid in this locale's encoding; rename the file or use UTF-8", EXIT_BAD_INPUT)
    except ValueError as e:
        if debug:
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set AQMLAB_DEBUG=1 for a traceback)", EXIT_INTERNAL)
    except SimulationError as e:
        if debug:
            raise
        _fail(str(e), EXIT_INTERNAL)
    except EngineUnavailable as e:
        if debug:
            raise
        _fail(str(e), EXIT_BAD_INPUT)
    except AqmlabError as e:
        if debug:
            raise
        _fail(str(e), EXIT_INTERNAL)
    except Exception as e:  # a bug: one line unless debugging
        if debug:
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set AQMLAB_DEBUG=1 for a traceback)", EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()

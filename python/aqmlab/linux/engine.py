"""The Linux engine: runs a scenario on a real kernel in a qemu VM and returns a
:class:`aqmlab.Result` with the simulator's tables and columns.

Measurement (docs/linux-engine.md lists every column and where it comes from):

- flows: iperf3's JSON (receiver intervals for goodput, sender totals for retransmits and
  RTT), ping's replies, irtt's round trips;
- queues: ``tc -s -d -j qdisc show`` of the qdisc under test (the child ``10:`` of the
  shaper), snapshots at the end of the warm-up and at the end of the run for the counters,
  sampled every bin in the routers' namespaces for the time series; the kernel
  has no per-packet sojourn time, so ``sojourn_*`` are estimated per sample as the queue's
  backlog (bytes) divided by the link rate (the time a packet arriving then would wait in a
  FIFO), and their statistics are over samples, not packets;
- columns the kernel cannot give (packet counts of TCP flows, ``enqueued``, ``rtos``,
  the sojourn histogram ...) are NaN.

The guest output is parsed by :mod:`aqmlab.linux.parse` and built into the result's
tables by :mod:`aqmlab.linux.collect` (flows: :mod:`aqmlab.linux.flows`, queues:
:mod:`aqmlab.linux.queues`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aqmlab.linux.vm as vm
from aqmlab.errors import AqmlabError
from aqmlab.linux.collect import CPU_SATURATED, START_LAG_NOTE, collect
from aqmlab.linux.translate import parse_progress, translate
from aqmlab.result import Result
from aqmlab.scenario import load_scenario

__all__ = ["run_linux", "collect", "CPU_SATURATED", "START_LAG_NOTE", "LinuxEngineError"]


def run_linux(
    scenario: Any,
    seed: int | None = None,
    *,
    icount_shift: int | None = None,
    memory_mb: int | None = None,
    keep: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    log: Callable[[str], None] | None = None,
    capture: list[str] | tuple[str, ...] | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> Result:
    """Runs ``scenario`` on the Linux kernel in the VM; returns a :class:`Result` whose
    ``engine_info`` says how it went (overhead, guest CPU busy fraction, notes).

    ``keep``: a directory to keep the job (script and raw guest output) in.
    ``icount_shift``: qemu ``-icount shift`` (default 0, or ``$AQMLAB_VM_ICOUNT``).
    ``capture``: queue names to capture packet headers around (tcpdump in the guest, the
    files stay in ``keep``, which it needs; default none, or ``$AQMLAB_VM_CAPTURE``, comma
    separated). A diagnostic: the captures cost guest CPU.
    ``progress``: called as ``progress(reached, length)`` about once per virtual second
    while the VM runs, with the virtual seconds of the job reached and its length
    (``reached`` passes ``length`` while the guest collects the results).
    """
    sc = load_scenario(scenario)
    # the flows start when the simulator's would with this seed (start_spread draws and
    # start jitter), so both engines see the same arrivals
    plan = sc.validate(seed=seed, spread=True)
    seed = seed if seed is not None else plan["seed"]
    if capture is None:
        capture = [c for c in os.environ.get("AQMLAB_VM_CAPTURE", "").split(",") if c.strip()]
    if capture and not keep:
        raise LinuxEngineError("a packet capture needs a directory to keep the job in (keep=..., --keep)")
    tr = translate(sc.to_dict(), plan, capture=[c.strip() for c in capture])
    shift = icount_shift if icount_shift is not None else int(os.environ.get("AQMLAB_VM_ICOUNT", "0"))
    mem = memory_mb or int(os.environ.get("AQMLAB_VM_MEMORY", str(512 + 16 * len(tr.flows))))
    say = log or (lambda m: None)
    image = vm.build_image(log=say)
    if tr.captures and "tcpdump" not in image.manifest.get("binaries", {}):
        raise LinuxEngineError(
            "a packet capture needs tcpdump in the VM image: install the Debian package tcpdump (AQMLAB_VM_OPTIONAL=1 aqmlab setup linux)"
        )
    say(f"linux engine: booting the VM (kernel {image.version}, TCG with -icount: minutes, not seconds)")
    job = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="aqmlab-vm-"))
    job.mkdir(parents=True, exist_ok=True)
    if (job / "out").exists():
        shutil.rmtree(job / "out")
    (job / "out").mkdir()
    (job / "run.sh").write_text(tr.script)
    t = time.monotonic()
    # generous: the emulation overhead under TCG is 5-30x depending on host load
    limit = (
        timeout
        if timeout is not None
        else float(os.environ.get("AQMLAB_VM_TIMEOUT", str(600 + 60 * tr.duration * max(1, len(tr.flows) / 4))))
    )
    try:
        on_line: Callable[[str], None] | None = None
        if progress is not None:
            report = progress

            def progress_line(line: str) -> None:
                v = parse_progress(line)
                if v is not None:
                    report(*v)

            on_line = progress_line

        run = vm.run_job(job, timeout=limit, memory_mb=mem, icount_shift=shift, image=image, on_line=on_line)
        if not run.exit_ok:
            raise vm.VmError(f"the guest did not finish the job: {run.console[-600:]}")
        raw, info = collect(job / "out", tr, seed=seed, wall_seconds=time.monotonic() - t)
    finally:
        if not keep:
            shutil.rmtree(job, ignore_errors=True)
    info.update(kernel=image.version, icount_shift=shift, memory_mb=mem)
    crng = re.search(r"aqmlab-vm: crng ready, waited from ([0-9.]+) to ([0-9.]+) s", run.console)
    if crng:
        # virtual seconds the guest's first getrandom() blocked (0 with RDRAND seeding)
        info["crng_wait_seconds"] = round(float(crng.group(2)) - float(crng.group(1)), 3)
    r = Result(raw, sc)
    r.engine_info = info
    return r


class LinuxEngineError(AqmlabError):
    """Raised when the Linux engine cannot run a scenario for a reason other than its content."""

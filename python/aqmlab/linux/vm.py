"""Builds and boots the Linux engine's virtual machine.

Everything comes from the Debian packages that ``aqmlab setup linux`` installs on the
host with apt-get; nothing is downloaded here:

- the kernel: the newest ``/boot/vmlinuz-VERSION`` that has ``/lib/modules/VERSION/modules.dep``
  (package ``linux-image-amd64``);
- the modules in :data:`MODULES`, with their dependencies resolved from ``modules.dep``
  and loaded in dependency order by the guest's ``/init``;
- user space: ``busybox`` (busybox-static) plus ``ip``/``tc`` (iproute2), ``iperf3``,
  ``ping`` (iputils-ping), ``ethtool`` and ``irtt``, each with the shared libraries
  ``ldd`` names, copied into an initramfs that :mod:`aqmlab.linux.cpio` writes;
- optional programs (:data:`OPTIONAL_BINARIES`: ``tcpdump`` for the opt-in packet
  captures) go in the same way when the host has them, and are left out otherwise.

The result is cached in ``$AQMLAB_VM_CACHE`` (default ``~/.cache/aqmlab/vm``): ``bzImage``,
``initramfs.cpio`` and ``manifest.json`` (what went in). :func:`run_job` boots the VM
with a job directory shared over virtio-9p: the guest runs ``job/run.sh`` and writes its
outputs next to it, then powers off.

Time: qemu runs the guest with TCG and ``-icount shift=N,sleep=off``: every guest
instruction advances the virtual clock by 2^N ns and an idle guest skips ahead to its next
timer, so what the guest measures does not depend on how busy the host is (the default
N = 0 makes a 1 GHz, one-instruction-per-ns CPU). Wall time / virtual time is the
emulation overhead.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aqmlab.errors import AqmlabError
from aqmlab.linux.cpio import CpioWriter

__all__ = ["VmError", "VmImage", "build_image", "find_image", "run_job", "MODULES", "BINARIES", "OPTIONAL_BINARIES", "cache_dir"]

#: Kernel modules the engine loads (dependencies are added from modules.dep). Modules that
#: Debian builds into the kernel (fq_codel, pfifo, bfifo, cubic, reno) need no entry;
#: one that is missing is skipped with a note in the manifest.
MODULES = (
    "virtio_pci", "9pnet_virtio", "9p", "veth", "bridge",
    "sch_htb", "sch_tbf", "sch_netem", "sch_codel", "sch_pie", "sch_fq_pie", "sch_cake",
    "sch_red", "sch_sfq", "sch_fq", "sch_fq_codel", "sch_prio",
    "tcp_bbr", "tcp_dctcp",
)

#: Programs copied into the initramfs, with the Debian package that provides each.
BINARIES = {
    "busybox": "busybox-static",
    "ip": "iproute2",
    "tc": "iproute2",
    "iperf3": "iperf3",
    "ping": "iputils-ping",
    "ethtool": "ethtool",
    "irtt": "irtt",
}

#: Programs copied into the initramfs when the host has them (the image is built without
#: them otherwise): ``tcpdump`` for the opt-in packet captures (``AQMLAB_VM_CAPTURE``).
OPTIONAL_BINARIES = {
    "tcpdump": "tcpdump",
}

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
while read -r m; do insmod "/modules/$m" 2>/dev/null; done < /modules/order
# The first getrandom() of an unseeded kernel spins the CPU on jitter entropy until the
# CRNG is ready (~1 s of virtual time): with RDRAND (qemu_command) it is seeded at boot and
# this read returns at once; it guards that nothing in the job pays for it.
u0=$(cut -d' ' -f1 /proc/uptime)
head -c 1 /dev/random > /dev/null
echo "aqmlab-vm: crng ready, waited from $u0 to $(cut -d' ' -f1 /proc/uptime) s"
mkdir -p /job
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /job; then
    echo "aqmlab-vm: job mounted"
    cp /job/run.sh /tmp/run.sh
    mkdir -p /tmp/out /job/out
    sh /tmp/run.sh > /tmp/out/guest.log 2>&1
    rc=$?
    cp /tmp/out/guest.log /job/out/guest.log
    echo "aqmlab-vm: job exit $rc"
else
    echo "aqmlab-vm: cannot mount the job share"
fi
sync
poweroff -f
"""


class VmError(AqmlabError):
    """The VM cannot be built or did not run the job."""


def cache_dir() -> Path:
    env = os.environ.get("AQMLAB_VM_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aqmlab" / "vm"


@dataclass(frozen=True)
class VmImage:
    kernel: Path
    initramfs: Path
    version: str
    manifest: dict


def _kernel_version(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.-]", v))


def find_kernel() -> tuple[Path, Path]:
    """(vmlinuz, module dir) of the newest kernel installed with its modules."""
    best = None
    for k in Path("/boot").glob("vmlinuz-*"):
        ver = k.name[len("vmlinuz-"):]
        mods = Path("/lib/modules") / ver
        if (mods / "modules.dep").is_file() and os.access(k, os.R_OK):
            if best is None or _kernel_version(ver) > _kernel_version(best[0]):
                best = (ver, k, mods)
    if best is None:
        raise VmError(
            "no kernel found: need /boot/vmlinuz-VERSION and /lib/modules/VERSION/modules.dep (run aqmlab setup linux, which installs "
            "linux-image-amd64)"
        )
    return best[1], best[2]


def parse_modules_dep(text: str) -> dict[str, list[str]]:
    """modules.dep text → {module name: [paths: the module's own file, then its deps]}."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        path, deps = line.split(":", 1)
        name = Path(path).name.split(".ko")[0].replace("-", "_")
        out[name] = [path.strip()] + deps.split()
    return out


def resolve_modules(wanted: list[str] | tuple[str, ...], dep: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """Module file paths in load order (every dependency before its users), and the
    wanted names that are not modules (built in or absent)."""
    by_path = {v[0]: v for v in dep.values()}
    order: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        for d in by_path.get(path, [path])[1:]:
            visit(d)
        order.append(path)

    missing = []
    for w in wanted:
        entry = dep.get(w.replace("-", "_"))
        if entry is None:
            missing.append(w)
        else:
            visit(entry[0])
    return order, missing


def _ldd(path: str) -> list[str]:
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    libs = []
    for line in out.splitlines():
        m = re.search(r"(/\S+)\s+\(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def _add_parents(w: CpioWriter, path: str) -> None:
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if not w.has(d):
            w.dir(d)


def _add_file(w: CpioWriter, dest: str, src: str | Path, mode: int = 0o755) -> None:
    _add_parents(w, dest)
    w.file(dest, Path(src).read_bytes(), mode)


def build_image(force: bool = False, log=print) -> VmImage:
    """Builds (or reuses) the cached kernel + initramfs; returns it."""
    kernel, mods = find_kernel()
    version = mods.name
    binaries = {}
    for b, pkg in BINARIES.items():
        p = shutil.which(b, path="/usr/bin:/usr/sbin:/bin:/sbin")
        if p is None:
            raise VmError(f"program {b!r} not found: install the Debian package {pkg} (aqmlab setup linux does)")
        binaries[b] = os.path.realpath(p)
    for b in OPTIONAL_BINARIES:
        p = shutil.which(b, path="/usr/bin:/usr/sbin:/bin:/sbin")
        if p is not None:
            binaries[b] = os.path.realpath(p)
    dep = parse_modules_dep((mods / "modules.dep").read_text())
    order, builtin = resolve_modules(MODULES, dep)
    key = hashlib.sha256(
        json.dumps([version, INIT, order, sorted(binaries.items()), [os.stat(p).st_mtime_ns for p in binaries.values()]]).encode()
    ).hexdigest()[:16]
    out = cache_dir() / version
    manifest_path = out / "manifest.json"
    if not force and manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("key") == key and (out / "initramfs.cpio").is_file() and (out / "bzImage").is_file():
            return VmImage(out / "bzImage", out / "initramfs.cpio", version, manifest)
    log(f"linux engine: building the VM image for kernel {version} in {out}")
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    w = CpioWriter(buf)
    for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "proc", "sys", "dev", "run", "tmp", "etc", "modules", "var"):
        w.dir(d)
    w.symlink("var/run", "/run")
    w.file("init", INIT.encode(), 0o755)
    w.file("etc/passwd", b"root:x:0:0:root:/:/bin/sh\n")
    w.file("etc/group", b"root:x:0:\n")
    w.file("etc/hosts", b"127.0.0.1 localhost\n")
    libs: set[str] = set()
    for b, p in binaries.items():
        dest = "bin/busybox" if b == "busybox" else f"usr/bin/{b}"
        _add_file(w, dest, p)
        libs.update(_ldd(p))
    for lib in sorted(libs):
        _add_file(w, lib, os.path.realpath(lib))
    mod_names = []
    for rel in order:
        name = Path(rel).name
        _add_file(w, f"modules/{name}", mods / rel, 0o644)
        mod_names.append(name)
    w.file("modules/order", ("\n".join(mod_names) + "\n").encode())
    w.close()
    (out / "initramfs.cpio").write_bytes(buf.getvalue())
    shutil.copyfile(kernel, out / "bzImage")
    manifest = {
        "key": key,
        "kernel": str(kernel),
        "version": version,
        "modules": order,
        "builtin_or_absent": builtin,
        "binaries": binaries,
        "libraries": sorted(libs),
        "initramfs_bytes": len(buf.getvalue()),
    }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return VmImage(out / "bzImage", out / "initramfs.cpio", version, manifest)


def find_image() -> VmImage:
    """The cached image, built first if needed."""
    return build_image(log=lambda *_: None)


def qemu_binary() -> str:
    q = shutil.which("qemu-system-x86_64")
    if q is None:
        raise VmError("qemu-system-x86_64 not found: install the Debian package qemu-system-x86 (aqmlab setup linux does)")
    return q


def qemu_command(image: VmImage, job_dir: Path, *, memory_mb: int = 1024, icount_shift: int = 0) -> list[str]:
    return [
        qemu_binary(),
        # +rdrand: the guest kernel seeds its CRNG from RDRAND at boot (TCG implements the
        # instruction with the host's randomness); without it the first getrandom() — every
        # iperf3 client's cookie — blocked ~1 s of virtual time until the kernel had
        # gathered jitter entropy, holding back flows meant to start one after another
        "-machine", "pc", "-accel", "tcg", "-cpu", "qemu64,+rdrand", "-smp", "1", "-m", str(memory_mb),
        "-icount", f"shift={icount_shift},sleep=off",
        "-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio",
        "-kernel", str(image.kernel), "-initrd", str(image.initramfs),
        "-append", "console=ttyS0 quiet panic=-1 mitigations=off",
        "-virtfs", f"local,path={job_dir},mount_tag=job,security_model=none,id=job",
    ]


@dataclass
class JobRun:
    wall_seconds: float
    console: str
    exit_ok: bool


def run_job(
    job_dir: Path,
    *,
    timeout: float,
    memory_mb: int = 1024,
    icount_shift: int = 0,
    image: VmImage | None = None,
    on_line: Callable[[str], None] | None = None,
) -> JobRun:
    """Boots the VM on ``job_dir`` (which holds ``run.sh``) and waits until it powers off.

    ``on_line`` is called with each line of the console as it arrives (the guest's progress
    lines among them); if it raises, it is not called again and the run goes on."""
    image = image or find_image()
    cmd = qemu_command(image, job_dir, memory_mb=memory_mb, icount_shift=icount_shift)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    chunks: list[bytes] = []

    def pump() -> None:
        # drains the console while qemu runs (a full pipe would stall the guest)
        listener = on_line
        assert p.stdout is not None
        for raw in p.stdout:
            chunks.append(raw)
            if listener is not None:
                try:
                    listener(raw.decode(errors="replace"))
                except Exception:  # a display callback must not stop the run
                    listener = None

    reader = threading.Thread(target=pump, name="aqmlab-vm-console", daemon=True)
    reader.start()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        reader.join(5)
        raise VmError(
            f"the VM did not finish within {timeout:.0f} s wall time (console tail: {b''.join(chunks)[-500:].decode(errors='replace')!r})"
        ) from None
    reader.join()
    wall = time.monotonic() - t0
    console = b"".join(chunks).decode(errors="replace")
    ok = "aqmlab-vm: job exit 0" in console
    if p.returncode != 0 and not ok:
        raise VmError(f"qemu exited with status {p.returncode}: {console[-800:]}")
    return JobRun(wall, console, ok)


def main() -> None:
    """``python -m aqmlab.linux.vm [--force]``: build the cached image and say what is in it."""
    import sys

    force = "--force" in sys.argv[1:]
    try:
        img = build_image(force=force)
        qemu_binary()
    except VmError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    m = img.manifest
    print(f"kernel {img.version}: {img.kernel}")
    print(
        f"initramfs {img.initramfs} ({m['initramfs_bytes'] / 1e6:.1f} MB): {len(m['modules'])} modules, {', '.join(sorted(m['binaries']))}"
    )


if __name__ == "__main__":
    main()

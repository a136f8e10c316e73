#!/usr/bin/env bash
# Sets up the Linux engine (aqmlab run --engine linux, aqmlab crosscheck):
#   1. installs these Debian packages with apt-get (needs root and Debian's archive):
#        qemu-system-x86   qemu-system-x86_64 (TCG emulation with -icount; KVM not needed)
#        linux-image-amd64 the kernel that runs in the VM (/boot/vmlinuz-*, /lib/modules/*)
#        busybox-static    the guest's shell and core utilities
#        iproute2          ip and tc
#        iperf3            bulk TCP and UDP CBR flows
#        iputils-ping      ICMP probes with per-reply output
#        irtt              UDP request/response probes (udp_rr)
#        ethtool           switching segmentation offloads off
#      and, only with AQMLAB_VM_OPTIONAL=1 (or when already installed), the optional
#        tcpdump           header captures around a queue (AQMLAB_VM_CAPTURE, campaign.py --capture);
#                          with its libraries (libpcap0.8 ...) as ldd resolves them
#   2. builds the VM image (kernel + initramfs assembled by aqmlab.linux.vm from the files
#      of those packages, tcpdump if installed; nothing else is downloaded) into ${AQMLAB_VM_CACHE:-~/.cache/aqmlab/vm}.
# Packages already installed are left as they are. Usage: aqmlab setup linux (or, in a
# source checkout, bash scripts/setup-vm.sh).
set -euo pipefail
# the Python that has aqmlab: `aqmlab setup linux` passes its own
PYTHON=${AQMLAB_PYTHON:-python3}
PKGS="qemu-system-x86 linux-image-amd64 busybox-static iproute2 iperf3 iputils-ping irtt ethtool"
OPTIONAL_PKGS="tcpdump"
[ "${AQMLAB_VM_OPTIONAL:-0}" = 1 ] && PKGS="$PKGS $OPTIONAL_PKGS"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup-vm: apt-get not found; install these Debian packages by hand:$missing" >&2
        exit 1
    fi
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "setup-vm: installing with apt-get:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "setup-vm: building the VM image"
"$PYTHON" -m aqmlab.linux.vm

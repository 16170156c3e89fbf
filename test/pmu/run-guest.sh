#!/usr/bin/env bash
# run-guest.sh GUEST WORK CMD...: boots the arm64 guest built by build-guest.sh in GUEST
# under qemu-system-aarch64 (software emulation with instruction counting, so the guest's
# PMUv3 counts its instructions exactly), with WORK shared read-write at /work, runs CMD
# there with /bin/sh, prints its output and exits with its exit status.
#
# -smp 1 is required: with two vCPUs the instruction counter is shared and counts leak
# between them. -nic none and romfile= keep QEMU from looking for option ROMs.
set -euo pipefail
guest=$1 work=$2
shift 2
kver=$(ls "$guest/root/lib/modules")
mkdir -p "$work/.pmu"
rm -f "$work/.pmu/out" "$work/.pmu/rc"
printf '%s\n' "$*" > "$work/.pmu/cmd"
cat > "$work/.pmu/env" <<ENV
export PATH=/work/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/busybox
export LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu:/lib/aarch64-linux-gnu
export HOME=/tmp TMPDIR=/tmp
ENV
log=$work/.pmu/console
timeout "${PMU_TIMEOUT:-1200}" qemu-system-aarch64 -M virt -cpu "${PMU_CPU:-max}" -icount shift=0 -smp 1 \
	-m "${PMU_MEM:-2048}" -nographic -nic none -no-reboot \
	-kernel "$guest/root/boot/vmlinuz-$kver" -initrd "$guest/initrd.gz" \
	-append "console=ttyAMA0 quiet loglevel=1 panic=-1" \
	-fsdev "local,id=root,path=$guest/root,security_model=none,readonly=on" \
	-device virtio-9p-pci,fsdev=root,mount_tag=guestroot,romfile= \
	-fsdev "local,id=work,path=$work,security_model=none" \
	-device virtio-9p-pci,fsdev=work,mount_tag=work,romfile= > "$log" 2>&1 || {
	echo "pmu: qemu failed (exit $?); console:" >&2; tail -n 30 "$log" >&2; exit 1; }
if [ ! -f "$work/.pmu/rc" ]; then
	echo "pmu: the guest did not finish the command; console:" >&2
	tail -n 30 "$log" >&2
	exit 1
fi
cat "$work/.pmu/out"
exit "$(cat "$work/.pmu/rc")"

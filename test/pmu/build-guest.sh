#!/usr/bin/env bash
# build-guest.sh DIR: builds the PMU testbed's arm64 guest in DIR from Debian's packages
# only: DIR/root (the guest's root, shared read-only over virtio-9p) and DIR/initrd.gz
# (busybox, the virtio-9p modules and test/pmu/init). Nothing is executed for the
# foreign architecture: mmdebstrap's extract variant only unpacks, so no qemu-user or
# binfmt is needed. DIR/stamp records what was built; an unchanged stamp skips the work.
set -euo pipefail
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
suite=${PMU_SUITE:-bookworm}
mirror=${PMU_MIRROR:-http://deb.debian.org/debian}
pkgs=linux-image-arm64,linux-perf,busybox-static
want="$suite $mirror $pkgs $(sha256sum "$here/init" "$0" | awk '{print $1}' | tr '\n' ' ')"
if [ -f "$dir/stamp" ] && [ "$(cat "$dir/stamp")" = "$want" ]; then exit 0; fi

rm -rf "$dir/root" "$dir/initrd" "$dir/initrd.gz" "$dir/stamp"
mkdir -p "$dir"
echo "pmu: building the arm64 guest in $dir ($suite: $pkgs)"
mmdebstrap --quiet --arch=arm64 --variant=extract --include="$pkgs" \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	"$suite" "$dir/root" "$mirror"
root=$dir/root
kver=$(ls "$root/lib/modules")
# The extract variant runs no maintainer script: no /bin/sh, no mount points, no
# modules.dep. busybox (ash) is the shell; the init mounts the rest.
ln -sf busybox "$root/bin/sh"
mkdir -p "$root"/{work,proc,sys,dev,run,tmp,opt/busybox}
depmod -b "$root" "$kver"

init=$dir/initrd
mkdir -p "$init"/{bin,proc,sys,dev,newroot,mod}
cp "$root/bin/busybox" "$init/bin/"
cp "$here/init" "$init/init"
chmod 755 "$init/init"
: > "$init/modules"
for m in 9p 9pnet_virtio virtio_pci; do
	modprobe -d "$root" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
	cp "$ko" "$init/mod/"
	basename "$ko" >> "$init/modules"
done
(cd "$init" && find . | cpio -o -H newc --quiet | gzip -1 > "$dir/initrd.gz")
echo "$want" > "$dir/stamp"
echo "pmu: guest ready: kernel $kver, $(du -sh "$root" | cut -f1)"

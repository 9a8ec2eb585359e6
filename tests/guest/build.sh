#!/bin/bash
# Builds what a test guest boots (tests/guest/README.md): Debian's kernel and an initramfs of
# busybox, bash, iproute2's ip, iputils' ping, ethtool and the kernel modules of virtio-net, TUN
# and the kernel's GRE tunnels (gre, ip_gre, ip6_gre, fou, fou6 and what they depend on), into a
# cache directory, once. The kernel comes from Debian's linux-image-amd64 package, fetched
# with apt-get download and unpacked with dpkg-deb -x into the cache: never installed, so the
# machine's own boot (its /boot, its boot loader, its initramfs) is never touched. The other
# programs are this machine's installed files (packages scripts/bootstrap installs).
#
#   tests/guest/build.sh [CACHE]    default CACHE: build/guest of the source tree
#
# Prints the cache directory. A second run with the same package and the same inputs
# changes nothing; another kernel package, or a changed init, rebuilds.
set -eu
set -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:-$here/../../build/guest}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
# One at a time: guest tests run side by side; the first makes the cache, the next waits for
# it and finds it made.
exec {lock}>"$cache/.lock"
flock "$lock"

die() {
	echo "guest build: $*" >&2
	exit 1
}

for tool in apt-cache apt-get dpkg-deb depmod ldd gzip busybox bash ip ping ethtool; do
	command -v "$tool" >/dev/null || die "$tool not found (scripts/bootstrap installs what the guest needs)"
done
busybox=$(command -v busybox)
# A dynamically linked busybox (Debian's busybox, not busybox-static) would need its
# libraries too; busybox-static is what scripts/bootstrap installs.
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is not statically linked: install busybox-static"
fi

# The kernel package linux-image-amd64 names (Debian's current one for this release).
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 (run apt-get update first)"
kver=${pkg#linux-image-}

modules=(virtio_pci virtio_net tun gre ip_gre ip6_gre fou fou6)
inputs=$(cat "$here/init" "$here/build.sh" | sha256sum | cut -c1-16)
stamp="$pkg $inputs $(sha256sum "$busybox" "$(command -v bash)" "$(command -v ip)" "$(command -v ping)" "$(command -v ethtool)" | cut -c1-16 | tr '\n' ' ')"
if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp" ] && [ -f "$cache/vmlinuz" ] &&
	[ -f "$cache/base.cpio.gz" ]; then
	echo "$cache"
	exit 0
fi

# The package: downloaded once into the cache (apt-get download writes to the current
# directory; as root it says it downloads unsandboxed, which is no error).
deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*_amd64.deb" | head -n 1)
if [ -z "$deb" ]; then
	rm -f "$cache"/linux-image-*.deb
	(cd "$cache" && apt-get download -q "$pkg" 2>&1 | grep -v 'unsandboxed' >&2) ||
		die "apt-get download $pkg failed"
	deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*_amd64.deb" | head -n 1)
	[ -n "$deb" ] || die "apt-get download $pkg left no package in $cache"
fi
kroot=$cache/kernel
rm -rf "$kroot"
mkdir -p "$kroot"
dpkg-deb -x "$deb" "$kroot"
[ -f "$kroot/boot/vmlinuz-$kver" ] || die "$deb holds no /boot/vmlinuz-$kver"
moddir=$kroot/lib/modules/$kver
# The package ships no modules.dep (its postinst makes it): made here for the unpacked tree.
depmod -b "$kroot" "$kver"

# The modules in load order: each after what it depends on (modules.dep).
declare -A path_of seen
while IFS=: read -r mod _; do
	base=${mod##*/}
	path_of[${base%.ko*}]=$mod
done <"$moddir/modules.dep"
order=()
add_module() { # name
	local name=$1 line dep
	[ -n "${seen[$name]:-}" ] && return 0
	seen[$name]=1
	[ -n "${path_of[$name]:-}" ] || die "no module $name in $pkg"
	line=$(grep -m1 "^${path_of[$name]}:" "$moddir/modules.dep")
	for dep in ${line#*:}; do
		dep=${dep##*/}
		add_module "${dep%.ko*}"
	done
	order+=("$name")
}
for m in "${modules[@]}"; do add_module "$m"; done

root=$cache/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,lib,lib64,modules,proc,sys,dev,run,tmp,etc,guest}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
# iproute2's ip (busybox's has no fou, no ip6gre, no encap options), ping (iputils: -M do),
# ethtool, with the libraries each links; and bash, which runs /init and the host's commands:
# busybox's shell runs its own applets before any program of the same name (Debian builds
# it so), which would be busybox's ip and ping.
for prog in bash ip ping ethtool; do
	rm -f "$root/bin/$prog"
	cp "$(readlink -f "$(command -v "$prog")")" "$root/bin/$prog"
	for lib in $(ldd "$(command -v "$prog")" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
done
for m in "${order[@]}"; do
	cp "$moddir/${path_of[$m]}" "$root/modules/$m.ko"
	echo "$m" >>"$root/modules/order"
done
cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp "$kroot/boot/vmlinuz-$kver" "$cache/vmlinuz"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$cache/base.cpio.gz.new"
mv "$cache/base.cpio.gz.new" "$cache/base.cpio.gz"
echo "$kver" >"$cache/kernel-version"
echo "$stamp" >"$cache/stamp"
rm -rf "$kroot"
echo "$cache"

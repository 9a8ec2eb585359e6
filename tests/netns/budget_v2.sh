#!/bin/bash
# Emulated cores on cgroup v2 (scripts/tunbedlib/budget.py's threaded subtree), which this
# machine cannot offer: its cpu controller is cgroup v1's, and a controller lives in one
# hierarchy. tests/python/test_budget_cgroup.py runs in a guest with Debian's kernel
# (tests/guest/, as Debian 12 hosts have it), cgroup2 mounted with the cpu controller, python3
# and the runner's modules added to its initramfs:
#
#   P-vm [qemu] -- guest: Debian's kernel, no NIC, cgroup2 at /sys/fs/cgroup (cpu among its
#                   controllers), /usr/bin/python3, /tunbed/{scripts,tests/python}
#
# TCG, one CPU: correctness only (the 20% bound is CPU time over wall time in the guest).
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../guest/guest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../guest/guest.sh"

netns_test_init
# shellcheck disable=SC2154 # rc is assigned inside the trap string
trap 'rc=$?; guest_cleanup; cleanup "$rc"' EXIT
new_prefix P tbbv
ip netns add "$P-vm"
# Python starts slowly under TCG; the test's seven cases take about a minute there.
GUEST_CMD_TIMEOUT=600

# python3 (Debian's, statically linked with libpython) with its libraries and the standard
# library, less what the tests never import, in the archive guest_start adds to the initramfs.
extra="$TMP/guest/extra"
mkdir -p "$extra/usr/bin" "$extra/usr/lib" "$extra/tunbed/scripts" "$extra/tunbed/tests"
python=$(readlink -f /usr/bin/python3)
cp "$python" "$extra/usr/bin/python3"
for lib in $(ldd "$python" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
	mkdir -p "$extra$(dirname "$lib")"
	cp -L "$lib" "$extra$lib"
done
stdlib=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
tar -C "$(dirname "$stdlib")" -cf - --exclude=test --exclude=idlelib --exclude=tkinter \
	--exclude=turtledemo --exclude=ensurepip --exclude=lib2to3 --exclude=pydoc_data \
	--exclude='config-*' --exclude=dist-packages --exclude=site-packages \
	"$(basename "$stdlib")" | tar -C "$extra/usr/lib" -xf -
cp -r "$TUNBED_SRC/scripts/tunbedlib" "$extra/tunbed/scripts/"
mkdir -p "$extra/tunbed/tests/python"
cp "$TUNBED_SRC/tests/python/test_budget_cgroup.py" "$extra/tunbed/tests/python/"
: >"$TMP/setup.sh"

guest_start "$P-vm" "$TMP/setup.sh"
guest_do "mount -t cgroup2 none /sys/fs/cgroup && cat /sys/fs/cgroup/cgroup.controllers"
expect_match "the guest's cgroup v2 has the cpu controller" "$GUEST_OUT" "(^| )cpu( |$)"
guest_do "grep -c cgroup2 /proc/self/mounts; grep -c ' cgroup ' /proc/self/mounts || true"
expect_eq "cgroup mounts in the guest (v2, v1)" "$(echo "$GUEST_OUT" | tr '\n' ' ')" "1 0 "
if guest_sh "cd /tunbed && /usr/bin/python3 tests/python/test_budget_cgroup.py 2>&1"; then
	log "ok: test_budget_cgroup.py on cgroup v2 in the guest"
else
	fail "test_budget_cgroup.py on cgroup v2 in the guest exited $GUEST_STATUS"
fi
echo "$GUEST_OUT" | grep -E "budget|^Ran|^OK|FAIL|Error" | sed 's/^/  guest: /'
guest_do "ls /sys/fs/cgroup | grep -c '^tunbed-' || true"
expect_eq "cgroups of tunbed left in the guest" "$GUEST_OUT" "0"
guest_stop
expect_eq "what of the guest is left" "$(guest_left)" ""

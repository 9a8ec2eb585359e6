#!/bin/bash
# Runs shellcheck on every shell script of the repository.
set -eu
top=${1:?usage: shellcheck.sh SOURCE_DIR}
cd "$top"
mapfile -t files < <({ find tests scripts topo -name '*.sh'; echo .ci/run; echo scripts/bootstrap; echo scripts/tunbed; echo scripts/package; echo scripts/build-id;
	echo scripts/test; echo tests/guest/init; } | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
[ "${#files[@]}" -gt 0 ] || { echo "no shell scripts found" >&2; exit 1; }
# A few files a call, as many calls at once as there are CPUs: the same checks, sooner.
printf '%s\0' "${files[@]}" | xargs -0 -n 4 -P "$(nproc)" shellcheck -x
echo "shellcheck: ${#files[@]} scripts clean"

#!/bin/bash
# Fails if a C source or header differs from what the repository's .clang-format makes of it.
set -eu
top=${1:?usage: clang-format.sh SOURCE_DIR}
cd "$top"
mapfile -t files < <(find common gateway traffic wire topo sample framebench tests -name '*.[ch]' 2>/dev/null | sort)
[ "${#files[@]}" -gt 0 ] || { echo "no C files found under $top" >&2; exit 1; }
bad=0
for f in "${files[@]}"; do
	if ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
		echo "not formatted: $f (run: clang-format -i $f)"
		bad=$((bad + 1))
	fi
done
echo "clang-format: ${#files[@]} files, $bad not formatted"
[ "$bad" -eq 0 ]

#!/bin/bash
# Fails if a header of the tree has the name of a header the C compiler finds on its own: each
# folder is on the include path of all that links its library, so a gateway/limits.h would be
# what every <limits.h> after it finds, the C library's own headers' included.
set -eu
top=${1:?usage: header-names.sh SOURCE_DIR CC}
cc=${2:?usage: header-names.sh SOURCE_DIR CC}
cd "$top"
mapfile -t files < <(find common gateway traffic wire topo sample framebench tests -name '*.h' 2>/dev/null | sort)
[ "${#files[@]}" -gt 0 ] || { echo "no headers found under $top" >&2; exit 1; }
bad=0
for f in "${files[@]}"; do
	if printf '#include <%s>\n' "${f##*/}" | "$cc" -E -x c - >/dev/null 2>&1; then
		echo "$f: shadows the system's <${f##*/}>; name it after what it holds"
		bad=$((bad + 1))
	fi
done
echo "header-names: ${#files[@]} headers, $bad shadowing a system header"
[ "$bad" -eq 0 ]

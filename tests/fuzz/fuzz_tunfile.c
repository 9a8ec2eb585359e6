/*
 * libFuzzer harness for the tunnel file (common/tunfile.h) and the table built from it: any
 * input is refused with a line that says why, or read into tunnels that build into a table in
 * which each tunnel is found by its peer and key, each prefix leads to a tunnel, and each
 * tunnel may replace itself but not be added again under another name (the file's rules and a
 * change's agree). The same bytes as one tunnel's keys, as the control socket takes them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gre.h"
#include "tunfile.h"
#include "tunnels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_file(const char *text, size_t size)
{
	struct tunfile f;
	struct line_error err;
	struct tunnels *t;

	if (tunfile_parse(text, size, size % 2, &f, &err) != 0) {
		if (!err.msg[0])
			abort();
		tunfile_free(&f);
		return;
	}
	if (tunnels_build(f.specs, f.n, NULL, &t) != 0)
		abort();
	for (unsigned i = 0; i < f.n; i++) {
		const struct tunnel_spec *s = &f.specs[i];
		struct tunnel_spec renamed = *s;
		uint32_t idx = TUNNELS_NONE;

		if (tunnels_decap(t, s->peer.family, s->peer.bytes, s->gre_flags & GRE_F_KEY,
				  s->key, &idx) != DROP_NONE ||
		    strcmp(tunnels_at(t, idx)->name, s->name) != 0)
			abort();
		for (unsigned j = 0; j < s->nprefixes; j++) {
			if (tunnels_encap(t, s->prefixes[j].addr.family,
					  s->prefixes[j].addr.bytes) == TUNNELS_NONE)
				abort();
		}
		if (tunfile_check_change(f.specs, f.n, TUNFILE_REPLACE, s, &err) != 0)
			abort();
		memcpy(renamed.name, "fuzz-renamed", sizeof("fuzz-renamed"));
		if (tunnels_find(t, renamed.name) == TUNNELS_NONE &&
		    tunfile_check_change(f.specs, f.n, TUNFILE_ADD, &renamed, &err) != -EEXIST)
			abort();
	}
	tunnels_free(t);
	tunfile_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tunnel_spec s;
	struct line_error err;

	check_file((const char *)data, size);
	if (tunfile_parse_tunnel("fuzz", (const char *)data, size, false, &s, &err) != 0) {
		if (!err.msg[0])
			abort();
	} else if (!s.peer.family || !s.nprefixes) {
		abort();
	}
	return 0;
}

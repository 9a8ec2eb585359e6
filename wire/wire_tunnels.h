/*
 * The tunnels the wire audit expects (docs/wire.md, --tunnels): a gateway's tunnel file
 * (common/tunfile.h), each tunnel a peer, an optional GRE key (RFC 2890) and whether it sends
 * sequence numbers and checksums; and the lookup of a frame's tunnel by the far end's address
 * and the key. Built once, at start; a lookup never allocates.
 */
#ifndef TUNBED_WIRE_TUNNELS_H
#define TUNBED_WIRE_TUNNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "netaddr.h"
#include "tunfile.h"

/* One expected tunnel. */
struct wire_tunnel {
	char name[TUNNEL_NAME_LEN];
	struct netaddr peer; /* the far end: the frames run between it and --local */
	unsigned gre_flags;  /* GRE_F_KEY, GRE_F_SEQ, GRE_F_CSUM: what each frame must carry */
	uint32_t key;	     /* with GRE_F_KEY */
	bool udp;	     /* GRE-in-UDP */
};

struct wire_tunnels {
	unsigned n;
	struct wire_tunnel *t; /* in the file's order */
	uint32_t *order;       /* indices of t by peer, then keyless first, then key */
};

/*
 * Takes the n tunnels of specs (a tunnel file's, whose rules hold: no two on one peer and
 * key). Returns 0 or -ENOMEM; w is then freed by wire_tunnels_fini, also after a failure.
 */
int wire_tunnels_init(struct wire_tunnels *w, const struct tunnel_spec *specs, unsigned n);
void wire_tunnels_fini(struct wire_tunnels *w);

/* Whether some tunnel's peer is addr. Pure. */
bool wire_tunnels_has_peer(const struct wire_tunnels *w, const struct netaddr *addr);

/*
 * The index of the tunnel of peer and key (has_key: the frame carries one), or -1: then
 * *keyed says whether the peer's tunnels all carry a key (a frame without one lacks it), as
 * against a key no tunnel of the peer has. Pure; log2 of the tunnels in steps.
 */
int wire_tunnels_find(const struct wire_tunnels *w, const struct netaddr *peer, bool has_key,
		      uint32_t key, bool *keyed);

#endif

/*
 * The tunnels the wire audit expects (see wire_tunnels.h): sorted once by peer and key, then
 * found by binary search.
 */
#include "wire_tunnels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gre.h"

/* Orders a peer and key: the address's family, bytes, then no key before a key, then the key. */
static int cmp_peer_key(const struct netaddr *pa, bool ka, uint32_t a, const struct netaddr *pb,
			bool kb, uint32_t b)
{
	int c;

	if (pa->family != pb->family)
		return pa->family < pb->family ? -1 : 1;
	c = memcmp(pa->bytes, pb->bytes, sizeof(pa->bytes));
	if (c)
		return c;
	if (ka != kb)
		return ka ? 1 : -1;
	return a < b ? -1 : a > b;
}

static int cmp_tunnel(const struct wire_tunnel *a, const struct wire_tunnel *b)
{
	return cmp_peer_key(&a->peer, a->gre_flags & GRE_F_KEY, a->key, &b->peer,
			    b->gre_flags & GRE_F_KEY, b->key);
}

/* qsort has no context: the table being sorted. */
static const struct wire_tunnel *sorting;

static int by_peer_key(const void *a, const void *b)
{
	return cmp_tunnel(&sorting[*(const uint32_t *)a], &sorting[*(const uint32_t *)b]);
}

int wire_tunnels_init(struct wire_tunnels *w, const struct tunnel_spec *specs, unsigned n)
{
	memset(w, 0, sizeof(*w));
	w->t = calloc(n ? n : 1, sizeof(*w->t));
	w->order = calloc(n ? n : 1, sizeof(*w->order));
	if (!w->t || !w->order)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct wire_tunnel *t = &w->t[i];

		memcpy(t->name, specs[i].name, sizeof(t->name));
		t->peer = specs[i].peer;
		/* Whatever a parser left past the address's length must not tell two apart. */
		memset(t->peer.bytes + netaddr_len(t->peer.family), 0,
		       sizeof(t->peer.bytes) - netaddr_len(t->peer.family));
		t->gre_flags = specs[i].gre_flags;
		t->key = specs[i].key;
		t->udp = specs[i].udp;
		w->order[i] = i;
	}
	w->n = n;
	sorting = w->t;
	qsort(w->order, n, sizeof(*w->order), by_peer_key);
	sorting = NULL;
	return 0;
}

void wire_tunnels_fini(struct wire_tunnels *w)
{
	free(w->t);
	free(w->order);
	memset(w, 0, sizeof(*w));
}

/* The first position of order whose tunnel is not below peer, has_key and key. */
static unsigned lower_bound(const struct wire_tunnels *w, const struct netaddr *peer, bool has_key,
			    uint32_t key)
{
	unsigned lo = 0, hi = w->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const struct wire_tunnel *t = &w->t[w->order[mid]];

		if (cmp_peer_key(&t->peer, t->gre_flags & GRE_F_KEY, t->key, peer, has_key, key) <
		    0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* addr with the bytes past its length zeroed, as the table holds its peers. */
static struct netaddr clean(const struct netaddr *addr)
{
	struct netaddr a = { .family = addr->family };

	memcpy(a.bytes, addr->bytes, netaddr_len(addr->family));
	return a;
}

bool wire_tunnels_has_peer(const struct wire_tunnels *w, const struct netaddr *addr)
{
	struct netaddr a = clean(addr);
	unsigned i = lower_bound(w, &a, false, 0);

	return i < w->n && netaddr_equal(&w->t[w->order[i]].peer, &a);
}

int wire_tunnels_find(const struct wire_tunnels *w, const struct netaddr *peer, bool has_key,
		      uint32_t key, bool *keyed)
{
	struct netaddr a = clean(peer);
	unsigned i = lower_bound(w, &a, has_key, key), first = lower_bound(w, &a, false, 0);
	const struct wire_tunnel *t;

	*keyed = false;
	if (i < w->n) {
		t = &w->t[w->order[i]];
		if (netaddr_equal(&t->peer, &a) && !!(t->gre_flags & GRE_F_KEY) == has_key &&
		    (!has_key || t->key == key))
			return (int)w->order[i];
	}
	/* The peer's first tunnel is its keyless one, if it has one. */
	*keyed = first < w->n && netaddr_equal(&w->t[w->order[first]].peer, &a) &&
		 (w->t[w->order[first]].gre_flags & GRE_F_KEY);
	return -1;
}

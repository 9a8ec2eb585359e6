/*
 * Inner sources accepted from the peer (see allow.h); the packet path matches them in
 * encap.c.
 */
#include "allow.h"

#include <errno.h>
#include <string.h>

#include "ifconf.h"
#include "log.h"

static struct encap_prefix prefix_of(const struct netprefix *p)
{
	struct encap_prefix e = { .family = (uint8_t)p->addr.family, .len = (uint8_t)p->len };

	memcpy(e.addr, p->addr.bytes, netaddr_len(p->addr.family));
	return e;
}

static struct encap_prefix host_of(const struct netprefix *p)
{
	struct encap_prefix e = prefix_of(p);

	e.len = (uint8_t)(netaddr_len(p->addr.family) * 8);
	return e;
}

int allow_plan(struct encap_cfg *e, const struct config *c)
{
	struct encap_prefix allow[ENCAP_ALLOW_MAX], own[ALLOW_LOCAL_MAX + 2];
	struct netprefix local[ALLOW_LOCAL_MAX];
	unsigned na = 0, no = 0, nlocal = 0;
	int rc;

	if (c->nallow) {
		for (unsigned i = 0; i < c->nallow; i++)
			allow[na++] = prefix_of(&c->allow[i]);
	} else {
		/* With --tunnels, the tunnels' own prefixes are their sources (encap.h), and a
		 * --route is a pool routed into the TUN, nobody's source. */
		for (int i = 0; !c->tunnels[0] && i < c->nroutes; i++)
			allow[na++] = prefix_of(&c->routes[i]);
		if (c->has_addr)
			allow[na++] = prefix_of(&c->addr);
		if (c->has_addr6) {
			/* The tunnel is a link: the peer's kernel speaks on it from its TUN's
			 * link-local address (MLD reports, router solicitations). */
			static const struct encap_prefix link_local = { .family = AF_INET6,
									.len = 10,
									.addr = { 0xfe, 0x80 } };

			allow[na++] = prefix_of(&c->addr6);
			allow[na++] = link_local;
		}
	}
	if (c->has_addr)
		own[no++] = host_of(&c->addr);
	if (c->has_addr6)
		own[no++] = host_of(&c->addr6);
	rc = ifconf_addresses(local, ALLOW_LOCAL_MAX, &nlocal);
	if (rc) {
		log_warnx("cannot list the namespace's addresses (never accepted as inner sources "
			  "from the peer): %s",
			  rc == -ENOSPC ? "more than 256" : strerror(-rc));
		return rc;
	}
	for (unsigned i = 0; i < nlocal; i++)
		own[no++] = prefix_of(&local[i]);
	rc = encap_sources(e, allow, na, own, no);
	if (rc) {
		log_warnx("more than %d of the namespace's prefixes lie within --allow-from",
			  ENCAP_OWN_MAX);
		return rc;
	}
	e->addr4_len = (uint8_t)c->addr.len;
	e->addr6_len = (uint8_t)c->addr6.len;
	return 0;
}

/*
 * Per-worker inner flow table (see flows.h).
 */
#include "flows.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"

static bool has_ports(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP ||
	       proto == IPPROTO_UDPLITE;
}

void flow_key_from(const uint8_t *pkt, size_t len, const struct ip_info *ip, struct flow_key *k)
{
	unsigned alen = ip_addr_len(ip->family);
	uint16_t sport = 0, dport = 0;
	bool first_frag =
		ip->family == AF_INET6 || !(load_be16(pkt + IPV4_FRAG_OFF) & IPV4_OFFMASK);
	int c;

	memset(k, 0, sizeof(*k));
	k->family = (uint8_t)ip->family;
	k->proto = ip->proto;
	if (has_ports(ip->proto) && first_frag && len >= ip->hlen + L4_PORTS_LEN) {
		sport = load_be16(pkt + ip->hlen + L4_SPORT_OFF);
		dport = load_be16(pkt + ip->hlen + L4_DPORT_OFF);
	}
	c = memcmp(ip->src, ip->dst, alen);
	if (c < 0 || (c == 0 && sport <= dport)) {
		memcpy(k->addr[0], ip->src, alen);
		memcpy(k->addr[1], ip->dst, alen);
		k->port[0] = sport;
		k->port[1] = dport;
	} else {
		memcpy(k->addr[0], ip->dst, alen);
		memcpy(k->addr[1], ip->src, alen);
		k->port[0] = dport;
		k->port[1] = sport;
	}
}

struct flow_entry *flow_get(struct flow_table *t, const struct flow_key *k)
{
	uint32_t h = flow_hash(k);

	for (unsigned i = 0; i < FLOW_PROBES; i++) {
		struct flow_entry *e = &t->e[(h + i) & (FLOW_TABLE_SIZE - 1)];

		if (e->used) {
			if (e->hash == h && memcmp(&e->key, k, sizeof(*k)) == 0)
				return e;
			continue;
		}
		e->hash = h;
		e->key = *k;
		__atomic_store_n(&e->used, 1, __ATOMIC_RELEASE);
		return e;
	}
	__atomic_store_n(&t->untracked, t->untracked + 1, __ATOMIC_RELAXED);
	return NULL;
}

int flow_seq(struct flow_entry *e, uint32_t seq, uint32_t era)
{
	int32_t d;

	if (e->seq_era != era) {
		e->seq_era = era;
		__atomic_store_n(&e->last_seq, seq, __ATOMIC_RELAXED);
		return 0;
	}
	d = (int32_t)(seq - e->last_seq);
	if (d < 0)
		return 1;
	if (d == 0)
		return 2;
	__atomic_store_n(&e->last_seq, seq, __ATOMIC_RELAXED);
	return 0;
}

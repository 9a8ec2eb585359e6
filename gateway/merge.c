/*
 * Merging of a flow's TUN reads (see merge.h), by the kernel's GRO rules (tcpjoin.h).
 */
#include "merge.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "tcpjoin.h"

/*
 * A read as merging takes it: TCP whose IP length is the read's (TUN hands over whole
 * packets, but a local raw socket can write anything into it), its checksum left partial at
 * its TCP header (the field then holds the pseudo-header's sum, rewritten when it is merged;
 * a complete one would be dropped unverified), and its payload's segments: *nseg of them,
 * *full when the last one is as large as the others.
 */
static bool take(const uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum,
		 struct tcpjoin_seg *s, unsigned *nseg, bool *full)
{
	size_t iplen;

	if (!tcpjoin_parse(pkt, len, s) || !s->mergeable || s->plen == 0)
		return false;
	iplen = s->family == AF_INET ? load_be16(pkt + IPV4_TOT_LEN_OFF)
				     : IPV6_HLEN + (size_t)load_be16(pkt + IPV6_PLEN_OFF);
	if (iplen != len || csum.start != s->l4_off || csum.offset != TCP_CSUM_OFF)
		return false;
	if (!mss) {
		*nseg = 1;
		*full = true; /* whether it is as large as the segments before it: the caller's */
		return true;
	}
	*nseg = (unsigned)((s->plen + mss - 1) / mss);
	*full = s->plen % mss == 0;
	return true;
}

bool merge_open(struct merge *m, uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum,
		size_t room)
{
	struct tcpjoin_seg s;
	unsigned nseg;
	bool full;

	/* A PSH does not end it (see merge.h); the rest of tcpjoin_opens does. */
	if (room < len || !take(pkt, len, mss, csum, &s, &nseg, &full) || !full ||
	    (s.flags & (TCP_F_SYN | TCP_F_FIN | TCP_F_RST | TCP_F_URG | TCP_F_CWR)))
		return false;
	*m = (struct merge){
		.pkt = pkt,
		.len = len,
		.room = room,
		.family = s.family,
		.l4_off = s.l4_off,
		.hdr_len = s.hdr_len,
		.mss = mss ? mss : (unsigned)s.plen,
		.nseg = nseg,
		.reads = 1,
		.next_seq = s.seq + (uint32_t)s.plen,
		.next_id =
			(uint16_t)(s.family == AF_INET ? load_be16(pkt + IPV4_ID_OFF) + nseg : 0),
	};
	return true;
}

bool merge_add(struct merge *m, const uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum)
{
	struct tcpjoin_seg s;
	unsigned nseg;
	bool full;

	if (m->closed || !take(pkt, len, mss, csum, &s, &nseg, &full))
		return false;
	/* GRO takes a superpacket of the same gso_size, or a packet no larger than one. */
	if (mss ? mss != m->mss : s.plen > m->mss)
		return false;
	if (!mss)
		full = s.plen == m->mss;
	if (m->len + s.plen > m->room || !tcpjoin_same_flow(m->pkt, m->family, m->l4_off, &s) ||
	    !tcpjoin_follows(m->pkt, m->l4_off, m->hdr_len, &s, m->next_seq, m->next_id,
			     TCPJOIN_NEWER_TS))
		return false;
	memcpy(m->pkt + m->len, pkt + s.hdr_len, s.plen);
	m->len += s.plen;
	m->nseg += nseg;
	m->reads++;
	m->next_seq += (uint32_t)s.plen;
	m->next_id = (uint16_t)(m->next_id + nseg);
	/* PSH and FIN go to the superpacket's end, where the segmentation leaves them. */
	m->pkt[m->l4_off + TCP_FLAGS_OFF] |= s.flags & (TCP_F_PSH | TCP_F_FIN);
	m->closed = !full || (s.flags & TCP_F_FIN);
	return true;
}

void merge_finish(struct merge *m)
{
	if (m->reads > 1)
		tcpjoin_finish(m->pkt, m->len, m->family, m->l4_off);
}

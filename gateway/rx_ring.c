/*
 * Plain GRE's receive transport (see rx_ring.h): AF_PACKET rings with fanout and a BPF filter
 * (packet(7), Linux Documentation/networking/packet_mmap.rst), superpackets read whole behind
 * their frames, the GRE sink and the drop at tc ingress.
 */
#include "rx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byteorder.h"
#include "clock.h"
#include "fd.h"
#include "gso.h"
#include "inet.h"
#include "log.h"
#include "netaddr.h"
#include "steer.h"
#include "tcx.h"

#ifndef PACKET_FANOUT_FLAG_IGNORE_OUTGOING
#define PACKET_FANOUT_FLAG_IGNORE_OUTGOING 0x4000 /* Linux 6.5 */
#endif

/* A load from the network header on: the socket is SOCK_RAW, its packets start at the
 * link-layer header, whatever its length (SKF_NET_OFF, linux/filter.h). */
#define NET_OFF(off) ((uint32_t)(SKF_NET_OFF + (int)(off)))

/* A classic BPF program being written: its instructions so far, and how many it will have. */
struct filter {
	struct sock_filter *insn;
	unsigned n, len;
};

static void stmt(struct filter *f, uint16_t code, uint32_t k)
{
	f->insn[f->n++] = (struct sock_filter){ .code = code, .k = k };
}

/* Compares A with k; when they differ, jumps to the last instruction. */
static void or_drop(struct filter *f, uint32_t k)
{
	f->insn[f->n] = (struct sock_filter){ .code = BPF_JMP | BPF_JEQ | BPF_K,
					      .jf = (uint8_t)(f->len - 2 - f->n),
					      .k = k };
	f->n++;
}

/* Compares A with k; when they are equal, skips the next skip instructions. */
static void if_skip(struct filter *f, uint32_t k, uint8_t skip)
{
	f->insn[f->n++] =
		(struct sock_filter){ .code = BPF_JMP | BPF_JEQ | BPF_K, .jt = skip, .k = k };
}

/*
 * Accepts IPv4 or IPv6 GRE addressed to local, and its fragments; everything else stays out
 * of the ring. The source is checked in userspace, so that GRE from an unknown peer is
 * counted, not unseen; so are fragments (outer_fragment): an IPv4 fragment names GRE in its
 * header, an IPv6 one in the fragment header that follows the fixed header. IPv6 GRE may
 * also follow a destination options header (the kernel's ip6gre sends one by default),
 * whose next header is at the same offset as the fragment header's. The EtherType (the
 * socket takes every protocol: ring_open), the version, the protocol, then the destination a
 * word at a time (one for IPv4, four for IPv6); the last instruction drops. Offsets count
 * from the network header.
 */
static int attach_filter(int fd, int family, const uint8_t *local)
{
	unsigned words = ip_addr_len(family) / 4;
	struct sock_filter insn[9 + 2 * 4 + 4];
	struct filter f = { .insn = insn, .len = 9 + 2 * words + (family == AF_INET6 ? 4 : 0) };
	struct sock_fprog prog = { .len = (unsigned short)f.len, .filter = insn };

	stmt(&f, BPF_LD | BPF_H | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL));
	or_drop(&f, family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP);
	stmt(&f, BPF_LD | BPF_B | BPF_ABS, NET_OFF(0));
	stmt(&f, BPF_ALU | BPF_AND | BPF_K, 0xf0);
	or_drop(&f, family == AF_INET6 ? 0x60 : 0x40);
	stmt(&f, BPF_LD | BPF_B | BPF_ABS, NET_OFF(ip_proto_off(family)));
	if (family == AF_INET6) {
		if_skip(&f, IPPROTO_GRE_NUM, 4);
		if_skip(&f, IPPROTO_FRAGMENT, 1);
		or_drop(&f, IPPROTO_DSTOPTS);
		stmt(&f, BPF_LD | BPF_B | BPF_ABS, NET_OFF(IPV6_HLEN + IPV6_EXT_NEXT_OFF));
	}
	or_drop(&f, IPPROTO_GRE_NUM);
	for (unsigned w = 0; w < words; w++) {
		stmt(&f, BPF_LD | BPF_W | BPF_ABS, NET_OFF(ip_dst_off(family) + 4 * w));
		or_drop(&f, load_be32(local + 4 * w));
	}
	stmt(&f, BPF_RET | BPF_K, 0xffffffff);
	stmt(&f, BPF_RET | BPF_K, 0);
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -errno;
	return 0;
}

/* A jump of insn i to label l (an instruction index), relative as classic BPF has it. */
#define TO(i, l) ((uint8_t)((l) - (i)-1))

/*
 * GRE-in-UDP (--wire-rx ring): IPv4 or IPv6 UDP addressed to local's port (over IPv4 behind
 * a header of any length; over IPv6 right after the fixed header), and its fragments (a
 * later IPv4 fragment has no UDP header, an IPv6 one a fragment header naming UDP) and UDP
 * behind an IPv6 destination options header (the kernel's ip6gre with fou sends one), whose
 * port decap checks. Offsets count from the network header.
 */
static int attach_udp_filter(int fd, int family, const uint8_t *local, uint16_t port)
{
	enum { V4_DROP = 15, V4_PASS = 14, V6_PORT = 19, V6_PASS = 21, V6_DROP = 22 };
	struct sock_filter v4[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, TO(1, V4_DROP)),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, NET_OFF(0)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x40, 0, TO(4, V4_DROP)),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, NET_OFF(IPV4_PROTO_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, TO(6, V4_DROP)),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NET_OFF(IPV4_DST_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local), 0, TO(8, V4_DROP)),
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, NET_OFF(IPV4_FRAG_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, IPV4_OFFMASK, TO(10, V4_PASS), 0),
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, NET_OFF(0)),
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, NET_OFF(UDP_DPORT_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, 0, TO(13, V4_DROP)),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_filter v6[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, TO(1, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, NET_OFF(0)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x60, 0, TO(4, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NET_OFF(IPV6_DST_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local), 0, TO(6, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NET_OFF(IPV6_DST_OFF + 4)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local + 4), 0, TO(8, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NET_OFF(IPV6_DST_OFF + 8)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local + 8), 0, TO(10, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NET_OFF(IPV6_DST_OFF + 12)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local + 12), 0, TO(12, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, NET_OFF(IPV6_NEXT_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, TO(14, V6_PORT), 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_DSTOPTS, TO(15, V6_PASS), 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_FRAGMENT, 0, TO(16, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, NET_OFF(IPV6_HLEN + IPV6_FRAG_NEXT_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, TO(18, V6_PASS), TO(18, V6_DROP)),
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, NET_OFF(IPV6_HLEN + UDP_DPORT_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, 0, TO(20, V6_DROP)),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(v4) / sizeof(v4[0]), .filter = v4 };

	if (family == AF_INET6)
		prog = (struct sock_fprog){ .len = sizeof(v6) / sizeof(v6[0]), .filter = v6 };
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -errno;
	return 0;
}

/*
 * A NIC driver's GRO (and veth's, when it is on) merges a flow's GRE packets into one
 * superpacket before the taps see it, too large for a frame sized to the MTU. With a copy
 * threshold the kernel then hands the frame over cut short and marked TP_STATUS_COPY, and
 * queues the whole packet on the socket, behind a virtio header (gso_size, checksum state).
 * The socket buffer holds those waiting; without CAP_NET_ADMIN it is net.core.rmem_max at
 * most, and a superpacket that finds it full reaches the frame alone (dropped, truncated).
 */
static int want_whole(int fd)
{
	int one = 1, buf = RX_GRO_RCVBUF;

	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof(one)) < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) < 0)
		return -errno;
	return 0;
}

static void ring_close_fd(struct rx_ring *r)
{
	pktring_unmap(&r->pr);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static int ring_open(struct rx_ring *r, const struct rx_group *grp)
{
	const struct rx_cfg *cfg = &grp->cfg;
	const struct encap_cfg *c = grp->sh->cfg;
	int prog = grp->ring.fanout_prog;
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = cfg->ifindex,
	};
	int fanout, flagged, rc, one = 1;

	/* SOCK_RAW, as PACKET_VNET_HDR requires: frames start at the link-layer header, and
	 * tp_net says where the IP header is. Bound to every protocol, the socket is a tap: it
	 * takes its copy before tc ingress, where the GRE drop (tcx.h) can keep the IP stack
	 * from the packet; PACKET_IGNORE_OUTGOING keeps our own transmissions out. */
	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->fd < 0)
		return -errno;
	if (setsockopt(r->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		rc = -errno;
		goto err;
	}
	/* Refused (an old kernel, or the buffer): merged superpackets are dropped as truncated,
	 * as before; gregw says so (r->gro stays false). */
	r->gro = cfg->gro && want_whole(r->fd) == 0;
	/* The filter goes on before the bind, so no unfiltered packet slips in between. */
	rc = c->udp ? attach_udp_filter(r->fd, c->family, c->local, c->udp_port)
		    : attach_filter(r->fd, c->family, c->local);
	if (rc)
		goto err;
	rc = pktring_map(&r->pr, r->fd, cfg->ring, cfg->frame_max, r->gro);
	if (rc)
		goto err;
	if (bind(r->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		rc = -errno;
		goto err;
	}
	/* Without PACKET_FANOUT_FLAG_DEFRAG: the tunnel sets DF and never fragments, so a
	 * fragment on the wire is an attack or a misconfigured path, and each one is counted
	 * (outer_fragment). Reassembled, a pair would pass as one good packet, and a lone
	 * fragment would wait in the kernel's queue until its timer dropped it, unseen. */
	/* The group's own hook must leave our transmissions out too: the socket's
	 * PACKET_IGNORE_OUTGOING does not reach it (PACKET_FANOUT_FLAG_IGNORE_OUTGOING, Linux
	 * 6.5; an older kernel refuses the flag, and its filter drops them instead). */
	fanout = (int)((cfg->fanout_group & 0xffffu) |
		       (unsigned)(prog >= 0 ? PACKET_FANOUT_EBPF : PACKET_FANOUT_HASH) << 16);
	flagged = fanout | (int)(PACKET_FANOUT_FLAG_IGNORE_OUTGOING << 16);
	if (setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &flagged, sizeof(flagged)) < 0 &&
	    (errno != EINVAL ||
	     setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) < 0)) {
		rc = -errno;
		goto err;
	}
	/* The group's program picks the member: the workers joined in their order. */
	if (prog >= 0 &&
	    setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT_DATA, &prog, sizeof(prog)) < 0) {
		rc = -errno;
		goto err;
	}
	return 0;
err:
	ring_close_fd(r);
	return rc;
}

/* What a virtio header says of a packet whose link-layer header is mac_len bytes. */
static struct rx_merged merged_from(const struct virtio_net_hdr *h, uint32_t mac_len)
{
	bool partial = h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;

	return (struct rx_merged){
		.gso_size = h->gso_type == VIRTIO_NET_HDR_GSO_NONE || !partial ? 0 : h->gso_size,
		.gso_type = h->gso_type,
		.csum_start = h->csum_start > mac_len ? (uint16_t)(h->csum_start - mac_len) : 0,
		.csum_offset = h->csum_offset,
	};
}

/*
 * The whole packet behind a frame marked copy (its link-layer header mac_len bytes, d->wirelen
 * from the IP header on), read into r->gro_buf with its virtio header: into d, from its outer
 * IP header. Returns 0, or -EMSGSIZE when the packet is not the one of the frame or larger
 * than the buffer, -errno when the socket had none.
 */
static int read_copy(struct rx_ring *r, uint32_t mac_len, struct rx_dgram *d)
{
	struct virtio_net_hdr h;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = r->gro_buf, .iov_len = RX_GRO_BUF },
	};
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	do
		n = recvmsg(r->fd, &m, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The queue holds the frames' packets in their order, one for each frame marked copy:
	 * anything else (cut short, or another length than the frame's) is not this one. */
	if ((m.msg_flags & MSG_TRUNC) || (size_t)n < sizeof(h) + mac_len ||
	    (size_t)n - sizeof(h) - mac_len != d->wirelen)
		return -EMSGSIZE;
	d->data = r->gro_buf + mac_len;
	d->len = d->wirelen;
	d->merged = merged_from(&h, mac_len);
	return 0;
}

/*
 * A socket whose filter drops everything: its presence alone makes the kernel treat what it
 * would take as delivered and send no ICMP "unreachable". Plain GRE: a raw IPPROTO_GRE socket
 * of family (one per gregw, not per worker: every raw socket gets a clone of every GRE
 * packet; "protocol unreachable" else); GRE-in-UDP from the ring: a UDP socket on c's port
 * ("port unreachable" else). Returns an fd or -errno.
 */
static int sink_open(const struct encap_cfg *c)
{
	struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = drop_all };
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	fd = c->udp ? socket(c->family, SOCK_DGRAM | SOCK_CLOEXEC, 0)
		    : socket(c->family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_GRE);
	if (fd < 0)
		return -errno;
	len = netaddr_sockaddr(c->family, c->local, c->udp_port, &ss);
	if (c->udp && bind(fd, (struct sockaddr *)&ss, len) < 0)
		return fd_close_err(fd);
	/* Refuse everything; nothing may queue up in a socket nobody reads. */
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
		return fd_close_err(fd);
	return fd;
}

/*
 * GRE-in-UDP from the ring: the outer UDP header's place (behind the IP header and an IPv6
 * destination options header), or 0 where it is not one decap would take. Pure.
 */
static size_t udp_at(const struct rx_dgram *d, struct ip_info *ip)
{
	size_t at;

	if (ip_parse(d->data, d->len, false, ip) < 0 || ip->fragment)
		return 0;
	at = ip->hlen;
	if (ip->family == AF_INET6 && ip->proto == IPPROTO_DSTOPTS) {
		if (d->len < IPV6_HLEN + IPV6_EXT_UNIT)
			return 0;
		ip->proto = d->data[IPV6_HLEN + IPV6_EXT_NEXT_OFF];
		at += ((size_t)d->data[IPV6_HLEN + IPV6_EXT_LEN_OFF] + 1) * IPV6_EXT_UNIT;
	}
	return ip->proto == IPPROTO_UDP && at + UDP_HLEN <= d->len ? at : 0;
}

/*
 * The outer UDP checksum of GRE-in-UDP from the ring, which the kernel checks for a socket
 * but not for a tap: right, or vouched for (status: the kernel checked it, or a sender on this
 * host left a checksum to the device); zero means none over IPv4, and is refused over IPv6
 * (RFC 8200, 8.1), as the kernel's socket refuses it. What decap cannot take (not UDP, a
 * length past the packet) is left to it. Sets whether the inner checksum is the one left
 * partial (the frame's virtio header says where; without one, a UDP socket's sender left the
 * outer one so). Returns false for a wrong checksum.
 */
static bool udp_check(struct rx_dgram *d, uint32_t status)
{
	struct ip_info ip;
	size_t at = udp_at(d, &ip), ulen;
	uint16_t csum;

	if (!at)
		return true;
	d->csum_partial = d->csum_partial && d->merged.csum_start > at + UDP_HLEN;
	ulen = load_be16(d->data + at + UDP_LEN_OFF);
	csum = load_be16(d->data + at + UDP_CSUM_OFF);
	if (status & (TP_STATUS_CSUM_VALID | TP_STATUS_CSUMNOTREADY) || ulen < UDP_HLEN ||
	    at + ulen > d->len)
		return true;
	if (csum == 0)
		return ip.family == AF_INET;
	return inet_csum_fold(inet_csum_add(
		       inet_pseudo_sum(ip.family, ip.src, ip.dst, IPPROTO_UDP, (uint32_t)ulen),
		       d->data + at, ulen)) == 0;
}

/* The next datagram of the burst in hand (rx_ring.burst). */
static void burst_next(struct rx_ring *r, struct rx_dgram *d)
{
	size_t len = r->burst_left < r->burst_seg ? r->burst_left : r->burst_seg;

	*d = (struct rx_dgram){ .data = r->burst,
				.len = len,
				.wirelen = len + r->burst_outer,
				.src = r->burst_src,
				.outer_ds = r->burst_ds };
	r->burst += len;
	r->burst_left -= len;
}

/*
 * A UDP GSO frame of GRE-in-UDP: the datagrams of a sender's UDP_SEGMENT send, carried whole
 * (a veth pair), gso_size bytes of UDP payload each but the last, behind one outer IP and UDP
 * header. Once those are to our address and port, to its length, the datagrams go out one at
 * a time, as the socket's UDP_GRO bursts do (rx_udp.c), each with the outer source for
 * tunnels_decap to check; anything else goes whole to decap, which drops it for what it is.
 * Returns whether a burst began.
 */
static bool burst_begin(struct rxq *q, struct rx_dgram *d)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned alen = ip_addr_len(c->family);
	struct ip_info ip;
	size_t at = udp_at(d, &ip);

	if (!at || d->len != d->wirelen || ip.family != c->family ||
	    memcmp(ip.dst, c->local, alen) != 0 ||
	    load_be16(d->data + at + UDP_DPORT_OFF) != c->udp_port ||
	    load_be16(d->data + at + UDP_LEN_OFF) != ip.tot_len - at)
		return false;
	q->ring.burst = d->data + at + UDP_HLEN;
	q->ring.burst_src = ip.src;
	q->ring.burst_ds = ip_dsfield(d->data);
	q->ring.burst_left = ip.tot_len - at - UDP_HLEN;
	q->ring.burst_seg = d->merged.gso_size;
	q->ring.burst_outer = (unsigned)(at + UDP_HLEN);
	stat_add(&q->stats->ctr[STAT_UDP_GRO_READS], 1);
	burst_next(&q->ring, d);
	return true;
}

static bool ring_next(struct rxq *q, struct rx_dgram *d)
{
	struct rx_ring *r = &q->ring;
	struct pktring_pkt p;
	bool copy;

	if (q->taken >= RX_BUDGET)
		return false;
	/* A burst in hand goes on before the ring's next frame (which returns its slot). */
	if (r->burst_left) {
		burst_next(r, d);
		return true;
	}
	if (!pktring_next(&r->pr, &p)) {
		/* The ring ran empty: as for the socket, no standing queue behind it. */
		rxq_aqm_take(q, q->now);
		return false;
	}
	rxq_aqm_take(q, p.queued);
	copy = p.status & TP_STATUS_COPY;
	/* From the outer IP header on: the ring's lengths count from the link-layer header. */
	d->data = p.mac + p.mac_len;
	d->len = p.snaplen > p.mac_len ? p.snaplen - p.mac_len : 0;
	d->wirelen = p.len > p.mac_len ? p.len - p.mac_len : 0;
	d->outer = true;
	d->drop = DROP_NONE;
	/* With virtio headers (r->gro), a packet the kernel merged that still fits a frame (a
	 * few short segments) says so in the one before it. */
	d->merged = merged_from(&p.vnet, p.mac_len);
	d->csum_partial = (p.status & TP_STATUS_CSUMNOTREADY) && !copy;
	/* A frame marked copy: the whole packet from the socket instead; DROP_TRUNCATED (as the
	 * frame alone would be) when it cannot be had. */
	if (copy && r->gro) {
		stat_add(&q->stats->ctr[STAT_RECV_CALLS], 1);
		if (read_copy(r, p.mac_len, d) < 0)
			d->drop = DROP_TRUNCATED;
	}
	if (q->sh->cfg->udp && d->drop == DROP_NONE && !udp_check(d, p.status))
		d->drop = DROP_BAD_OUTER;
	if (q->sh->cfg->udp && d->drop == DROP_NONE && d->merged.gso_size &&
	    (d->merged.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) == VIRTIO_NET_HDR_GSO_UDP_L4 &&
	    burst_begin(q, d))
		return true;
	if (d->drop == DROP_NONE && d->merged.gso_size)
		stat_add(&q->stats->ctr[STAT_GRE_GRO_READS], 1);
	return true;
}

/* The ring stamps every frame: CoDel judges the pass's frames at its start. */
static void ring_begin(struct rxq *q)
{
	if (q->sh->aqm)
		q->now = clock_real_ns();
}

static uint64_t ring_drops(struct rxq *q)
{
	return pktring_drops(&q->ring.pr);
}

static int ring_queue_open(struct rxq *q, unsigned id, const struct rx_group *grp)
{
	struct rx_ring *r = &q->ring;
	int rc;

	(void)id; /* the fanout group takes its members in the order they join */
	r->fd = -1;
	if (grp->cfg.gro) {
		r->gro_buf = aligned_alloc(64, RX_GRO_BUF);
		if (!r->gro_buf)
			return -ENOMEM;
	}
	rc = ring_open(r, grp);
	if (rc)
		return rc;
	q->fd = r->fd;
	return 0;
}

static void ring_queue_close(struct rxq *q)
{
	ring_close_fd(&q->ring);
	free(q->ring.gro_buf);
	q->ring.gro_buf = NULL;
}

/*
 * The fanout group's program, which picks a flow's worker by the flow table (steer.h): where
 * the kernel refuses it, its flow hash picks, and the TUN device must not steer by the table,
 * or the two would disagree. Then the sink.
 */
static int ring_group_init(struct rx_group *grp)
{
	struct rx_ring_group *rg = &grp->ring;
	const struct encap_cfg *c = grp->sh->cfg;

	rg->sink_fd = rg->tcx_fd = -1;
	/* Over UDP the inner packet lies past the outer IP and UDP headers and GRE. */
	rg->fanout_prog = steer_fanout_load(
		c->udp ? ip_fixed_hlen(c->family) + UDP_HLEN + c->outer_hlen : c->outer_hlen,
		&grp->sh->steer, grp->cfg.nworkers);
	if (rg->fanout_prog < 0)
		log_warnx("no steering program for the receive rings (PACKET_FANOUT_EBPF: Linux "
			  "4.3; %s): the kernel's flow hash picks the worker, and the TUN device "
			  "follows it",
			  strerror(-rg->fanout_prog));
	grp->tun_steer = rg->fanout_prog >= 0;
	if (c->udp)
		udp_group_probe(grp->sh, false);
	rg->sink_fd = sink_open(c);
	if (rg->sink_fd < 0) {
		int rc = rg->sink_fd;

		log_warnx("cannot open the %s sink socket: %s", c->udp ? "GRE-in-UDP" : "GRE",
			  strerror(-rc));
		if (rg->fanout_prog >= 0)
			close(rg->fanout_prog);
		rg->fanout_prog = -1;
		return rc;
	}
	return 0;
}

static void ring_group_ready(struct rx_group *grp, const struct rxq *first)
{
	struct rx_ring_group *rg = &grp->ring;
	const struct encap_cfg *c = grp->sh->cfg;

	rg->whole = first->ring.gro;
	if (grp->cfg.gro && !rg->whole)
		log_warnx("the receive rings cannot take merged superpackets whole: where the "
			  "interface merges GRE (GRO), those are dropped as truncated");
	/* The group holds its program now. */
	if (rg->fanout_prog >= 0)
		close(rg->fanout_prog);
	rg->fanout_prog = -1;
	if (!grp->cfg.ingress_drop)
		return;
	/* The rings take their copies first; the IP stack then never sees the GRE. */
	rg->tcx_fd = c->udp ? tcx_udp_drop_attach(grp->cfg.ifindex, c->family, c->local, c->remote,
						  c->udp_port)
			    : tcx_gre_drop_attach(grp->cfg.ifindex, c->family, c->local, c->remote);
	if (rg->tcx_fd < 0)
		log_warnx("no %s drop at tc ingress (tcx: Linux 6.6; %s): the IP stack takes each "
			  "packet too, to the sink socket",
			  c->udp ? "GRE-in-UDP" : "GRE", strerror(-rg->tcx_fd));
}

static void ring_group_fini(struct rx_group *grp)
{
	struct rx_ring_group *rg = &grp->ring;

	if (rg->tcx_fd >= 0)
		close(rg->tcx_fd);
	if (rg->fanout_prog >= 0)
		close(rg->fanout_prog);
	if (rg->sink_fd >= 0)
		close(rg->sink_fd);
	rg->tcx_fd = rg->fanout_prog = rg->sink_fd = -1;
}

const struct rx_ops rx_ring_ops = {
	.drops_name = "ring_drops",
	.group_init = ring_group_init,
	.group_ready = ring_group_ready,
	.group_fini = ring_group_fini,
	.open = ring_queue_open,
	.close = ring_queue_close,
	.begin = ring_begin,
	.next = ring_next,
	.drops = ring_drops,
};

/*
 * The TAP transport (see tx_tap.h): superpackets written whole into a TAP device
 * (Documentation/networking/tuntap.rst; its virtio header, include/uapi/linux/virtio_net.h,
 * with GSO over a UDP tunnel since Linux 6.17), redirected by a tcx program to the interface
 * towards the peer; GRE (RFC 2784, RFC 2890) and GRE-in-UDP (RFC 8086).
 */
#include "tx.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "byteorder.h"
#include "ifconf.h"
#include "log.h"
#include "tcx.h"
#include "uapi_newer.h"

enum {
	TAP_VNET_TNL = sizeof(struct virtio_net_hdr_v1_hash_tunnel), /* GRE-in-UDP's header */
	TAP_VNET = sizeof(struct virtio_net_hdr),		     /* plain GRE's */
	TAP_GRE_MAX = GRE_HLEN_MIN + GRE_OPT_LEN, /* the TAP carries a key, never more */
	TAP_LEN_MAX = 65535,			  /* an IPv4 total or IPv6 payload length */
};

/* The TAP's name, a template the kernel completes (gregw-tx0, gregw-tx1, ...). */
#define TAP_NAME "gregw-tx%d"

_Static_assert(ENCAP_HEADROOM >= TAP_VNET_TNL + ETH_HLEN + IPV6_HLEN + UDP_HLEN + TAP_GRE_MAX,
	       "a GRE-in-UDP superpacket's headers fit before its inner packet");

void tx_tap_group_clear(struct tx_tap_group *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < CONFIG_MAX_WORKERS; i++)
		t->fds[i] = -1;
	t->link_fd = -1;
}

bool tx_tap_takes(unsigned gre_flags, int family, const uint8_t *peer, const uint8_t *first)
{
	return !(gre_flags & (GRE_F_SEQ | GRE_F_CSUM)) &&
	       memcmp(peer, first, ip_addr_len(family)) == 0;
}

/* Why the configuration keeps superpackets from going whole, or NULL: they need a TUN that
 * hands them over and, for the one tunnel of --remote, no per-segment GRE field (a sequence
 * number, a checksum), which the kernel's segmentation cannot make. A tunnel file's table
 * may change: each tunnel is judged as its superpackets come (tx_tap_takes). */
static const char *tap_unfit(const struct gw_shared *sh)
{
	unsigned f = sh->cfg->tunnel_sources ? 0 : sh->cfg->gre_flags;

	if (!sh->vnet_hdr)
		return "--offload off";
	if (f & GRE_F_SEQ)
		return "--seq";
	if (f & GRE_F_CSUM)
		return "--csum";
	if (!(sh->tun_offloads & (TUN_F_TSO4 | TUN_F_TSO6)))
		return "no TCP superpackets from TUN";
	return NULL;
}

static void tap_close(struct tx_tap_group *t)
{
	if (t->link_fd >= 0)
		close(t->link_fd);
	for (unsigned i = 0; i < t->nfds; i++) {
		if (t->fds[i] >= 0)
			close(t->fds[i]);
		t->fds[i] = -1;
	}
	t->nfds = 0;
	t->link_fd = -1;
}

/* The multi-queue TAP of n queues, named by the kernel, its virtio header vnet_len bytes.
 * Returns 0 or -errno. */
static int tap_open(struct tx_tap_group *t, unsigned n, unsigned vnet_len)
{
	int sz = (int)vnet_len;

	for (unsigned i = 0; i < n; i++) {
		struct ifreq ifr = { .ifr_flags =
					     IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE };
		int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		t->fds[t->nfds++] = fd;
		/* The later queues attach to the device the first one made. */
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i ? t->name : TAP_NAME);
		if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETVNETHDRSZ, &sz) < 0)
			return -errno;
		if (i == 0)
			snprintf(t->name, sizeof(t->name), "%s", ifr.ifr_name);
	}
	t->ifindex = (int)if_nametoindex(t->name);
	return t->ifindex > 0 ? 0 : -ENODEV;
}

/*
 * Up, and nothing of the stack's own on it: no IPv6 (no router solicitation, no MLD report),
 * no address (no ARP). What the stack sent to it would wait in a queue nobody reads.
 */
static int tap_up(const struct tx_tap_group *t)
{
	int rc = ifconf_sysctl("ipv6", t->name, "disable_ipv6", "1");

	if (rc && rc != -ENOENT)
		return rc;
	return ifconf_link_up(t->ifindex, 0, 0);
}

/* The GRE-in-UDP template: the outer IP header (DF, TTL, addresses) and UDP to the peer's
 * port; lengths, checksum and source port are the packet's. */
static void udp_template(struct tx_tap_group *t, const struct encap_cfg *c)
{
	memset(t->outer, 0, sizeof(t->outer));
	t->ip_hlen = ip_fixed_hlen(c->family);
	encap_ip_template(c, IPPROTO_UDP, t->outer);
	store_be16(t->outer + t->ip_hlen + UDP_DPORT_OFF, c->udp_port);
}

/*
 * Whether the interface the TAP redirects to cuts GRE-in-UDP's superpackets itself (ethtool's
 * features): a veth, or a NIC with UDP tunnel offloads. NULL when it does, else the feature it
 * lacks. Only GRE-in-UDP asks: without the feature the kernel cuts in software before the
 * device, which plain GRE's superpackets survive and still cost less than gregw's own cutting
 * (4.10 against 2.60 Gbit/s, 2 workers, 1 session, docs/benchmarks.md). GRE-in-UDP's
 * segments come out with their inner checksums partial, which a veth carries so: a receiver
 * that takes them from a UDP socket must complete them (gregw does: udp_csum_partial; before
 * it did, 0 bit/s). Until that path is measured against gregw's own cutting, GRE-in-UDP takes
 * the per-segment path there unless --wire-tx tap is given.
 */
static const char *udp_device_unfit(const struct tx_group *grp, char *dev, size_t devlen)
{
	const struct encap_cfg *c = grp->sh->cfg;
	const char *need[2] = { "tx-udp_tnl-segmentation", "tx-udp_tnl-csum-segmentation" };
	unsigned n = c->family == AF_INET6 ? 2 : 1;
	bool on[2] = { false, false };

	if (!if_indextoname((unsigned)grp->cfg.ifindex, dev)) {
		snprintf(dev, devlen, "?");
		return need[0];
	}
	if (ifconf_features(dev, need, n, on) < 0)
		return need[0];
	for (unsigned i = 0; i < n; i++)
		if (!on[i])
			return need[i];
	return NULL;
}

/*
 * The program's source address: that of the interface it redirects to, which the next hop's
 * frames carry (tx_tap_whole_max holds them to it). A frame carries its tunnel's key there
 * instead, which the program moves into GRE: the key goes with the frame, read from the table
 * the worker's pass holds, as on every other transport, so a change through the control
 * socket holds for the next packet with no program or map to update. A BPF map of keys by
 * tunnel slot would still need the slot in the frame, and an update ordered against the
 * workers' passes; the virtio header has no field to spare, and the frame no other byte.
 */
static int src_mac(struct tx_group *grp)
{
	struct ifconf_link l;
	int rc = ifconf_link_get(&grp->nh.req, grp->cfg.ifindex, &l);

	if (rc)
		return rc;
	if (!l.has_addr)
		return -ENODATA;
	memcpy(grp->tap.src_mac, l.addr, ETH_ALEN);
	return 0;
}

/* The TAP's part of the group once its fallback is ready; see tx_group_init. Says why it
 * cannot be, once, where the kernel or the device is the reason. */
static int tap_prepare(struct tx_group *grp)
{
	struct gw_shared *sh = grp->sh;
	const struct encap_cfg *c = sh->cfg;
	struct tx_tap_group *t = &grp->tap;
	struct tcx_tap prog = { .redirect = grp->cfg.ifindex, .gre = !c->udp, .family = c->family };
	char dev[IF_NAMESIZE], why[160];
	const char *lack;
	int rc;

	grp->why = tap_unfit(sh);
	if (grp->why)
		return -EOPNOTSUPP;
	/* What the kernel lacks first (it names a version), then what the device does. */
	t->vnet_len = c->udp ? TAP_VNET_TNL : TAP_VNET;
	t->redirect = grp->cfg.ifindex;
	/* A tunnel file's tunnels may have a key or not, and change: the longer header. */
	t->whole_max = TAP_LEN_MAX - (c->family == AF_INET ? IPV4_HLEN : 0) -
		       (c->udp ? UDP_HLEN : 0) -
		       gre_hlen(c->tunnel_sources ? GRE_F_KEY : c->gre_flags);
	rc = tap_open(t, grp->cfg.nworkers, t->vnet_len);
	if (rc) {
		snprintf(why, sizeof(why), "a TAP: %s", strerror(-rc));
		grp->why = "no TAP";
		goto fail;
	}
	/* Over UDP the virtio header names the tunnel: a kernel that knows it takes the
	 * offload's flag (Linux 6.17); an older one refuses the unknown bit. */
	if (c->udp &&
	    ioctl(t->fds[0], TUNSETOFFLOAD,
		  (unsigned long)(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_UDP_TUNNEL_GSO |
				  (c->family == AF_INET6 ? TUN_F_UDP_TUNNEL_GSO_CSUM : 0))) < 0) {
		snprintf(why, sizeof(why), "UDP tunnel GSO in a TAP needs Linux 6.17: %s",
			 strerror(errno));
		grp->why = "no UDP tunnel GSO in a TAP (Linux 6.17)";
		goto fail;
	}
	rc = tap_up(t);
	if (rc) {
		snprintf(why, sizeof(why), "%s up: %s", t->name, strerror(-rc));
		grp->why = "no TAP";
		goto fail;
	}
	if (!c->udp) {
		rc = src_mac(grp);
		if (rc) {
			snprintf(why, sizeof(why),
				 "the address of the interface towards the peer: %s",
				 rc == -ENODATA ? "none" : strerror(-rc));
			grp->why = "no Ethernet address towards the peer";
			goto fail;
		}
		memcpy(prog.src, c->local, ip_addr_len(c->family));
		memcpy(prog.dst, c->remote, ip_addr_len(c->family));
		prog.ttl = c->ttl;
		prog.ttl_inherit = c->tos.ttl_inherit;
		prog.ecn_copy = true;
		prog.dscp_inherit = c->tos.dscp_inherit;
		prog.dscp = c->tos.dscp;
		prog.key_in_frame = true;
		memcpy(prog.src_mac, t->src_mac, ETH_ALEN);
	}
	t->link_fd = tcx_tap_attach(t->ifindex, &prog);
	if (t->link_fd < 0) {
		snprintf(why, sizeof(why), "its tcx program needs Linux 6.6: %s",
			 strerror(-t->link_fd));
		grp->why = "no tcx (Linux 6.6)";
		t->link_fd = -1;
		goto fail;
	}
	lack = c->udp && !grp->cfg.tap_software ? udp_device_unfit(grp, dev, sizeof(dev)) : NULL;
	if (lack) {
		snprintf(why, sizeof(why), "%s: %s off", dev, lack);
		grp->why = "the interface towards the peer does not segment the tunnel";
		goto fail;
	}
	udp_template(t, c);
	/* Frames need the next hop's address; the packet transport follows it already. */
	if (!grp->nh.pub) {
		struct netaddr remote = { .family = c->family }, local = remote;

		memcpy(remote.bytes, c->remote, netaddr_len(remote.family));
		memcpy(local.bytes, c->local, netaddr_len(local.family));
		rc = nexthop_open(&grp->nh, &sh->nh, &remote, &local);
		if (rc) {
			snprintf(why, sizeof(why), "the next hop: %s", strerror(-rc));
			grp->why = "no next hop lookups";
			goto fail;
		}
	}
	return 0;

fail:
	tap_close(t);
	log_warnx("superpackets cannot go whole through a TAP (%s): cut into segments as before",
		  why);
	return -EOPNOTSUPP;
}

static void tap_release(struct tx_group *grp)
{
	tap_close(&grp->tap);
	if (grp->ops->fallback->release)
		grp->ops->fallback->release(grp);
	nexthop_close(&grp->nh); /* the TAP's own, over UDP; the packet transport's, again */
}

static int tap_queue_open(struct txq *q)
{
	const struct tx_group *grp = q->grp;
	int rc = q->ops->fallback->open(q);

	if (rc)
		return rc;
	q->tap.fd = grp->tap.fds[q->id];
	q->tap.probes_seen = __atomic_load_n(&q->sh->nh.probes, __ATOMIC_RELAXED);
	return 0;
}

static void tap_queue_close(struct txq *q)
{
	q->ops->fallback->close(q);
	q->tap.fd = -1;
}

size_t tx_tap_whole_max(struct txq *q)
{
	struct tx_tap *t = &q->tap;
	uint32_t probes = __atomic_load_n(&q->sh->nh.probes, __ATOMIC_RELAXED);

	nexthop_read(&q->sh->nh, &t->hop_seen, &t->hop);
	if (t->hop.ifindex != q->grp->tap.redirect)
		return 0;
	/* The interface's address changed since start: plain GRE's program would write the old
	 * one over the key, so the frames carry the new one. */
	if (!q->sh->cfg->udp && memcmp(t->hop.eth + ETH_ALEN, q->grp->tap.src_mac, ETH_ALEN) != 0)
		return 0;
	/* A pass that cuts: the fallback's probe (plain GRE), or the IP stack's own use of the
	 * neighbour (GRE-in-UDP's sockets), keeps the kernel's neighbour entry in use. */
	if (probes != t->probes_seen) {
		t->probes_seen = probes;
		return 0;
	}
	return q->grp->tap.whole_max;
}

/*
 * The virtio header of a superpacket (TUN's gso_size and type kept, the inner checksum left
 * partial, its start moved by what precedes the inner packet: pre bytes from the frame's
 * start) into h, the TAP's vnet_len bytes. Over UDP, the tunnel's: the outer UDP header at
 * th, the inner IP header at pre.
 */
static void vnet_fill(const struct txq *q, const struct tx_ent *e, unsigned pre, unsigned th,
		      uint8_t *h)
{
	const struct encap_cfg *c = q->sh->cfg;
	struct virtio_net_hdr_v1_hash_tunnel t;
	struct virtio_net_hdr *v = (struct virtio_net_hdr *)&t;

	memset(&t, 0, sizeof(t));
	v->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	v->gso_type = e->gso.type;
	v->hdr_len = htole16((uint16_t)(pre + e->gso.hdr_len));
	v->gso_size = htole16(e->gso.size);
	v->csum_start = htole16((uint16_t)(pre + e->gso.l4_off));
	v->csum_offset = htole16(TCP_CSUM_OFF);
	if (c->udp) {
		v->gso_type |= c->family == AF_INET6 ? VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6
						     : VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4;
		/* Over IPv6 a UDP checksum is required (RFC 8200, 8.1): left to the device, as
		 * the inner one is. */
		if (c->family == AF_INET6)
			v->flags |= VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM;
		t.outer_th_offset = htole16((uint16_t)th);
		t.inner_nh_offset = htole16((uint16_t)pre);
	}
	memcpy(h, &t, q->grp->tap.vnet_len);
}

/*
 * Entry e's frame, written before its inner packet: the virtio header, the Ethernet header to
 * the next hop and, over UDP, the outer IP (to the tunnel's peer; its DS field and TTL
 * encap_tos's: the kernel's segmentation copies them into every segment) and UDP headers
 * (outer checksum 0 over IPv4, as the kernel's fou sends it; over IPv6 the pseudo-header's
 * sum, for the device) and the tunnel's GRE header. Plain GRE's frame carries the inner
 * packet's EtherType, and in its source address the tunnel's GRE flags and key
 * (TCX_TAP_FRAME_FLAGS, TCX_TAP_FRAME_KEY): the TAP's program puts GRE before it with that
 * key and writes the source address back. Returns the frame's start; *len its length.
 */
static uint8_t *frame_build(struct txq *q, const struct tx_ent *e, size_t *len)
{
	const struct encap_cfg *c = q->sh->cfg;
	const struct tx_tap_group *t = &q->grp->tap;
	const struct tunnel *tn = e->tn;
	bool v6 = (e->inner[0] >> 4) == 6;
	uint8_t *l3 = e->inner, *eth;
	unsigned pre, th = 0;

	if (c->udp) {
		uint8_t *gre = encap_build(c, tn, e->inner, e->len, 0), *udp = gre - UDP_HLEN;
		size_t ulen = UDP_HLEN + e->outer_hlen + e->len;

		l3 = udp - t->ip_hlen;
		memcpy(l3, t->outer, t->ip_hlen + UDP_HLEN);
		memcpy(l3 + ip_dst_off(c->family), tn->peer, ip_addr_len(c->family));
		tos_write(l3, t->ip_hlen, encap_tos(c, e->inner));
		store_be16(udp + UDP_SPORT_OFF, q->sh->udp_sports[e->sock]);
		store_be16(udp + UDP_LEN_OFF, (uint16_t)ulen);
		if (c->family == AF_INET6) {
			store_be16(l3 + IPV6_PLEN_OFF, (uint16_t)ulen);
			store_be16(udp + UDP_CSUM_OFF,
				   (uint16_t)~inet_csum_fold(
					   inet_pseudo_sum(AF_INET6, l3 + IPV6_SRC_OFF,
							   l3 + IPV6_DST_OFF, IPPROTO_UDP, ulen)));
		} else {
			store_be16(l3 + IPV4_TOT_LEN_OFF, (uint16_t)(IPV4_HLEN + ulen));
			store_be16(l3 + IPV4_CSUM_OFF, 0);
			store_be16(l3 + IPV4_CSUM_OFF, inet_csum(l3, IPV4_HLEN));
		}
		th = ETH_HLEN + t->ip_hlen;
	}
	eth = l3 - ETH_HLEN;
	memcpy(eth, q->tap.hop.eth, ETH_HLEN);
	if (!c->udp) {
		bool key = tn->gre_flags & GRE_F_KEY;

		store_be16(eth + TCX_TAP_FRAME_FLAGS, key ? GRE_BIT_K : 0);
		store_be32(eth + TCX_TAP_FRAME_KEY, key ? tn->key : 0);
		store_be16(eth + ETH_TYPE_OFF, v6 ? ETH_P_IPV6 : ETH_P_IP);
	}
	pre = (unsigned)(e->inner - eth);
	vnet_fill(q, e, pre, th, eth - t->vnet_len);
	*len = t->vnet_len + pre + e->len;
	return eth - t->vnet_len;
}

/* One superpacket into the TAP: counted as the segments it carries, each with its outer
 * headers, as the per-segment transports count what they send. */
static void tap_write(struct txq *q, const struct tx_ent *e)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned outer = (c->udp ? ip_fixed_hlen(c->family) + UDP_HLEN : 0) + e->outer_hlen;
	size_t len;
	uint8_t *frame = frame_build(q, e, &len);
	ssize_t n;

	do {
		stat_add(&q->stats->ctr[STAT_SEND_CALLS], 1);
		n = write(q->tap.fd, frame, len);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len) {
		/* The kernel refused the header or had no memory: the whole superpacket. */
		txq_drop_send(q, e, e->gso.nseg);
		return;
	}
	stat_add(&q->stats->ctr[STAT_TAP_WRITES], 1);
	stat_add(&q->stats->ctr[STAT_TAP_SEGMENTS], e->gso.nseg);
	txq_count_sent(q, e->gso.nseg,
		       e->len + (uint64_t)(e->gso.nseg - 1) * e->gso.hdr_len +
			       (uint64_t)e->gso.nseg * outer);
}

/* The queue in its order: superpackets into the TAP, each run of the rest by the fallback. */
static void tap_send(struct txq *q, unsigned from, unsigned to)
{
	unsigned i = from;

	while (i < to) {
		unsigned j = i;

		while (j < to && !q->ents[j].gso.size)
			j++;
		if (j > i)
			q->ops->fallback->send(q, i, j);
		for (; j < to && q->ents[j].gso.size; j++)
			tap_write(q, &q->ents[j]);
		i = j;
	}
}

const struct tx_ops tx_tap_gre_ops = {
	.name = "tap",
	.fallback = &tx_packet_ops,
	.prepare = tap_prepare,
	.release = tap_release,
	.open = tap_queue_open,
	.close = tap_queue_close,
	.send = tap_send,
};

const struct tx_ops tx_tap_udp_ops = {
	.name = "tap",
	.fallback = &tx_udp_ops,
	.prepare = tap_prepare,
	.release = tap_release,
	.open = tap_queue_open,
	.close = tap_queue_close,
	.send = tap_send,
};

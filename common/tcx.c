/*
 * The tcx programs of tcx.h: BPF_PROG_TYPE_SCHED_CLS, attached with BPF_LINK_CREATE. The
 * helpers' contracts are in uapi/linux/bpf.h; what bpf_skb_adjust_room does to a GSO skb is
 * in net/core/filter.c (bpf_skb_net_grow).
 */
#include "tcx.h"

#include <errno.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "byteorder.h"
#include "ebpf.h"
#include "gre.h"
#include "inet.h"

enum {
	/* The longest drop program, IPv6's: 1 + 2 + 2 + 3 + 2 * 2 * 4 + 2 + 2
	 * (tcx_gre_drop_attach). */
	TCX_INSNS_MAX = 28,
	/* The TAP's longest program, IPv4 with the key in the frame: 5 to check the EtherType,
	 * 3 the frame's GRE flags, then each of its two headers: 9 stores, 3 to take the key,
	 * 14 for the DS field and TTL (IPv6 outside: 20), 3 for the protocol type, 5 for the
	 * length, 17 for the checksum, 14 to encapsulate (65; without the key 61); a jump
	 * between them, 4 to redirect, 2 to drop: 141 (IPv6: 129). */
	TCX_TAP_INSNS_MAX = 192,
	/* The outer IP header on the stack, from r10, word aligned as the stores are; before it
	 * the frame's Ethernet source address (key_in_frame) and the EtherType, after it GRE. */
	TCX_TAP_IP = -56,
	TCX_TAP_AREA = TCX_TAP_IP - ETH_ALEN - 2, /* the stores' start */
	TCX_TAP_AREA_MAX = ETH_ALEN + 2 + IPV6_HLEN + GRE_HLEN_MIN + GRE_OPT_LEN,
	TCX_IP_LEN_MAX = 65535, /* the IPv4 total length, or the IPv6 payload length */
};

_Static_assert(TCX_TAP_AREA % 4 == 0 && TCX_TAP_AREA + TCX_TAP_AREA_MAX <= 0,
	       "the outer header's area is word aligned, within the stack");

/* d = d as a 16- or 32-bit big-endian number (BPF_END: the byte swap, where the host needs
 * one). */
#define EBPF_TO_BE16(d) EBPF_INSN(BPF_ALU | BPF_END | BPF_TO_BE, (d), 0, 0, 16)
#define EBPF_TO_BE32(d) EBPF_INSN(BPF_ALU | BPF_END | BPF_TO_BE, (d), 0, 0, 32)

/* r0 = the word at off; unless it is want, to the "next" tail at index next. */
static unsigned word_is(struct bpf_insn *p, unsigned i, unsigned off, uint32_t want, unsigned next)
{
	p[i] = EBPF_LD_ABS(BPF_W, (int)off);
	p[i + 1] = EBPF_JMP32_IMM(BPF_JNE, BPF_REG_0, (int32_t)want, (int16_t)(next - i - 2));
	return i + 2;
}

int tcx_gre_drop_attach(int ifindex, int family, const uint8_t *local, const uint8_t *remote)
{
	bool v6 = family == AF_INET6;
	unsigned words = v6 ? 4 : 1, n = 0;
	/* Checks: the EtherType, the protocol (over IPv6 also 47 behind a destination options
	 * header, as decap takes it: three more), the source's words, the destination's; then
	 * the two tails, drop and next. */
	unsigned next = 1 + 2 + 2 + (v6 ? 3 : 0) + 2 * 2 * words + 2;
	struct bpf_insn p[TCX_INSNS_MAX];
	int prog, link;

	p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1);
	p[n++] = EBPF_LD_ABS(BPF_H, ETH_TYPE_OFF);
	p[n] = EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, v6 ? ETH_P_IPV6 : ETH_P_IP,
			    (int16_t)(next - n - 1));
	n++;
	p[n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN + ip_proto_off(family));
	if (v6) {
		p[n++] = EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_GRE_NUM, 3);
		p[n] = EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_DSTOPTS, (int16_t)(next - n - 1));
		n++;
		p[n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN + IPV6_HLEN + IPV6_EXT_NEXT_OFF);
	}
	p[n] = EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_GRE_NUM, (int16_t)(next - n - 1));
	n++;
	for (unsigned w = 0; w < words; w++)
		n = word_is(p, n, ETH_HLEN + ip_src_off(family) + 4 * w, load_be32(remote + 4 * w),
			    next);
	for (unsigned w = 0; w < words; w++)
		n = word_is(p, n, ETH_HLEN + ip_dst_off(family) + 4 * w, load_be32(local + 4 * w),
			    next);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_DROP);
	p[n++] = EBPF_EXIT();
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_NEXT);
	p[n++] = EBPF_EXIT();
	prog = ebpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, p, n);
	if (prog < 0)
		return prog;
	link = ebpf_link_create(prog, ifindex, EBPF_ATTACH_TCX_INGRESS, 0);
	close(prog); /* the link holds the program */
	return link;
}

/* The host-order word whose bytes in memory are p[0..3]: what a 32-bit store writes. */
static int32_t mem_word(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return (int32_t)w;
}

/* A program being written, and the jumps to its tails (drop; next), patched once they are
 * placed. */
struct tcx_prog {
	struct bpf_insn p[TCX_TAP_INSNS_MAX];
	unsigned n;
	unsigned to_drop[16], ndrop;
	unsigned to_next[16], nnext;
};

/* A conditional jump (op, imm) from r<reg> to the drop tail. */
static void jump_drop(struct tcx_prog *g, uint8_t op, uint8_t reg, int32_t imm)
{
	g->to_drop[g->ndrop++] = g->n;
	g->p[g->n++] = EBPF_JMP_IMM(op, reg, imm, 0);
}

/* The same to the next tail, comparing r0's low 32 bits (an address word). */
static void jump_next32(struct tcx_prog *g, uint8_t op, int32_t imm)
{
	g->to_next[g->nnext++] = g->n;
	g->p[g->n++] = EBPF_JMP32_IMM(op, BPF_REG_0, imm, 0);
}

/* Places the drop tail, then the next tail, and patches the jumps to them. */
static void tails(struct tcx_prog *g)
{
	for (unsigned i = 0; i < g->ndrop; i++)
		g->p[g->to_drop[i]].off = (int16_t)(g->n - g->to_drop[i] - 1);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_DROP);
	g->p[g->n++] = EBPF_EXIT();
	for (unsigned i = 0; i < g->nnext; i++)
		g->p[g->to_next[i]].off = (int16_t)(g->n - g->to_next[i] - 1);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_NEXT);
	g->p[g->n++] = EBPF_EXIT();
}

/* Loads g and attaches it at tcx ingress of ifindex. Returns the link's fd or -errno. */
static int attach(int ifindex, const struct tcx_prog *g)
{
	int prog = ebpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, g->p, g->n), link;

	if (prog < 0)
		return prog;
	link = ebpf_link_create(prog, ifindex, EBPF_ATTACH_TCX_INGRESS, 0);
	close(prog); /* the link holds the program */
	return link;
}

int tcx_udp_drop_attach(int ifindex, int family, const uint8_t *local, const uint8_t *remote,
			uint16_t port)
{
	bool v6 = family == AF_INET6;
	unsigned words = v6 ? 4 : 1;
	struct tcx_prog g = { .n = 0 };

	g.p[g.n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1);
	g.p[g.n++] = EBPF_LD_ABS(BPF_H, ETH_TYPE_OFF);
	jump_next32(&g, BPF_JNE, v6 ? ETH_P_IPV6 : ETH_P_IP);
	g.p[g.n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN + ip_proto_off(family));
	jump_next32(&g, BPF_JNE, IPPROTO_UDP);
	for (unsigned w = 0; w < words; w++) {
		g.p[g.n++] = EBPF_LD_ABS(BPF_W, ETH_HLEN + ip_src_off(family) + 4 * (int)w);
		jump_next32(&g, BPF_JNE, (int32_t)load_be32(remote + 4 * w));
	}
	for (unsigned w = 0; w < words; w++) {
		g.p[g.n++] = EBPF_LD_ABS(BPF_W, ETH_HLEN + ip_dst_off(family) + 4 * (int)w);
		jump_next32(&g, BPF_JNE, (int32_t)load_be32(local + 4 * w));
	}
	if (v6) {
		g.p[g.n++] = EBPF_LD_ABS(BPF_H, ETH_HLEN + IPV6_HLEN + UDP_DPORT_OFF);
	} else {
		/* A later fragment has no UDP header: the stack reassembles it. */
		g.p[g.n++] = EBPF_LD_ABS(BPF_H, ETH_HLEN + IPV4_FRAG_OFF);
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, IPV4_OFFMASK | IPV4_MF);
		jump_next32(&g, BPF_JNE, 0);
		g.p[g.n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN);
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, 0x0f);
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_LSH, BPF_REG_0, 2);
		g.p[g.n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_7, BPF_REG_0);
		g.p[g.n++] = EBPF_LD_IND(BPF_H, BPF_REG_7, ETH_HLEN + UDP_DPORT_OFF);
	}
	jump_next32(&g, BPF_JNE, port);
	tails(&g);
	return attach(ifindex, &g);
}

/*
 * The outer DS field and TTL written over the template's (the outer IP header at ip_at on the
 * stack) from the frame's IP header, IPv4 or IPv6 as its EtherType (r7) says: r8 the inner DS
 * field, r9 its TTL. The template holds a fixed DSCP already; nothing is read when nothing is
 * inherited.
 */
static void tap_tos(struct tcx_prog *g, const struct tcx_tap *t, int ip_at)
{
	int32_t mask = (t->dscp_inherit ? 0xfc : 0) | (t->ecn_copy ? IP_ECN_MASK : 0);
	int32_t fixed = t->dscp_inherit ? 0 : t->dscp << IP_DSCP_SHIFT;
	unsigned to_v4, to_end;

	if (!mask && !t->ttl_inherit)
		return;
	to_v4 = g->n;
	g->p[g->n++] = EBPF_JMP_IMM(BPF_JNE, BPF_REG_7, ETH_P_IPV6, 0);
	/* Version, traffic class, the flow label's top: the class is bits 4 to 11. */
	g->p[g->n++] = EBPF_LD_ABS(BPF_H, ETH_HLEN);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_RSH, BPF_REG_0, IPV6_TCLASS_SHIFT);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_8, BPF_REG_0);
	g->p[g->n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN + IPV6_HOPS_OFF);
	to_end = g->n;
	g->p[g->n++] = EBPF_JA(0);
	g->p[to_v4].off = (int16_t)(g->n - to_v4 - 1);
	g->p[g->n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN + 1);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_8, BPF_REG_0);
	g->p[g->n++] = EBPF_LD_ABS(BPF_B, ETH_HLEN + IPV4_TTL_OFF);
	g->p[to_end].off = (int16_t)(g->n - to_end - 1);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_9, BPF_REG_0);
	if (t->ttl_inherit)
		g->p[g->n++] = EBPF_STX_MEM(BPF_B, BPF_REG_10, BPF_REG_9,
					    ip_at + (int)ip_ttl_off(t->family));
	if (!mask)
		return;
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_AND, BPF_REG_8, mask);
	if (fixed)
		g->p[g->n++] = EBPF_ALU64_IMM(BPF_OR, BPF_REG_8, fixed);
	if (t->family != AF_INET6) {
		g->p[g->n++] = EBPF_STX_MEM(BPF_B, BPF_REG_10, BPF_REG_8, ip_at + 1);
		return;
	}
	/* The class across the first two bytes: the version and its high nibble, then its low
	 * nibble and the flow label's first bits (0). */
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_8);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_RSH, BPF_REG_1, 4);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_OR, BPF_REG_1, 0x60);
	g->p[g->n++] = EBPF_STX_MEM(BPF_B, BPF_REG_10, BPF_REG_1, ip_at);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_AND, BPF_REG_8, 0x0f);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_LSH, BPF_REG_8, 4);
	g->p[g->n++] = EBPF_STX_MEM(BPF_B, BPF_REG_10, BPF_REG_8, ip_at + 1);
}

/*
 * The outer header on the stack (TCX_TAP_AREA): the frame's source address (key_in_frame),
 * the outer EtherType, the IP header at TCX_TAP_IP (its length from skb->len; IPv4's checksum
 * by bpf_csum_diff), then GRE, its protocol type the frame's EtherType (r7), with a key or
 * without (key): t's, or the frame's (key_in_frame). A frame too long for the header's length
 * field goes to the drop.
 */
static void tap_header(struct tcx_prog *g, const struct tcx_tap *t, bool key)
{
	bool v6 = t->family == AF_INET6;
	unsigned ipl = ip_fixed_hlen(t->family), grel = key ? 8 : 4, area = 8 + ipl + grel;
	uint8_t w[TCX_TAP_AREA_MAX] = { 0 }, *ip = w + 8, *gre = ip + ipl;
	int ip_at = TCX_TAP_IP, gre_at = ip_at + (int)ipl;
	/* skb->len counts the Ethernet header; the length field counts the outer packet (IPv4)
	 * or what follows the fixed header (IPv6). */
	int32_t add = v6 ? (int32_t)grel - ETH_HLEN : (int32_t)(ipl + grel) - ETH_HLEN;

	uint8_t ds = t->dscp_inherit ? 0 : (uint8_t)(t->dscp << IP_DSCP_SHIFT);

	memcpy(w, t->src_mac, ETH_ALEN);
	store_be16(w + ETH_ALEN, v6 ? ETH_P_IPV6 : ETH_P_IP);
	if (v6) {
		store_be16(ip, (uint16_t)(0x6000 | ds << IPV6_TCLASS_SHIFT));
		ip[IPV6_NEXT_OFF] = IPPROTO_GRE_NUM;
		ip[IPV6_HOPS_OFF] = t->ttl ? t->ttl : 64;
	} else {
		ip[0] = 0x45;
		ip[1] = ds;
		store_be16(ip + IPV4_FRAG_OFF, IPV4_DF);
		ip[IPV4_TTL_OFF] = t->ttl ? t->ttl : 64;
		ip[IPV4_PROTO_OFF] = IPPROTO_GRE_NUM;
	}
	memcpy(ip + ip_src_off(t->family), t->src, ip_addr_len(t->family));
	memcpy(ip + ip_dst_off(t->family), t->dst, ip_addr_len(t->family));
	if (key) {
		store_be16(gre, GRE_BIT_K);
		store_be32(gre + GRE_HLEN_MIN, t->key_in_frame ? 0 : t->key_value);
	}
	for (unsigned i = 0; i < area; i += 4)
		g->p[g->n++] =
			EBPF_ST_MEM(BPF_W, BPF_REG_10, TCX_TAP_AREA + (int)i, mem_word(w + i));
	if (key && t->key_in_frame) {
		g->p[g->n++] = EBPF_LD_ABS(BPF_W, TCX_TAP_FRAME_KEY);
		g->p[g->n++] = EBPF_TO_BE32(BPF_REG_0);
		g->p[g->n++] = EBPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_0, gre_at + GRE_HLEN_MIN);
	}
	tap_tos(g, t, ip_at);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_7);
	g->p[g->n++] = EBPF_TO_BE16(BPF_REG_1);
	g->p[g->n++] = EBPF_STX_MEM(BPF_H, BPF_REG_10, BPF_REG_1, gre_at + GRE_PROTO_OFF);
	g->p[g->n++] = EBPF_LDX_MEM(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct __sk_buff, len));
	jump_drop(g, BPF_JGT, BPF_REG_2, TCX_IP_LEN_MAX - add);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_ADD, BPF_REG_2, add);
	g->p[g->n++] = EBPF_TO_BE16(BPF_REG_2);
	g->p[g->n++] = EBPF_STX_MEM(BPF_H, BPF_REG_10, BPF_REG_2,
				    ip_at + (v6 ? IPV6_PLEN_OFF : IPV4_TOT_LEN_OFF));
	if (v6)
		return;
	/* r0 = the 32-bit sum of the IPv4 header (its checksum field 0), folded to 16 bits,
	 * inverted: stored as it is, in the header's byte order, as the kernel stores one. */
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_1, 0);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, 0);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_3, BPF_REG_10);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_ADD, BPF_REG_3, ip_at);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4, IPV4_HLEN);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_5, 0);
	g->p[g->n++] = EBPF_CALL(BPF_FUNC_csum_diff);
	for (unsigned i = 0; i < 2; i++) {
		g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_0);
		g->p[g->n++] = EBPF_ALU64_IMM(BPF_RSH, BPF_REG_1, 16);
		g->p[g->n++] = EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, 0xffff);
		g->p[g->n++] = EBPF_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1);
	}
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_XOR, BPF_REG_0, 0xffff);
	g->p[g->n++] = EBPF_STX_MEM(BPF_H, BPF_REG_10, BPF_REG_0, ip_at + IPV4_CSUM_OFF);
}

/*
 * Room for the outer header after the Ethernet header, the skb marked as GRE over IPv4 or IPv6
 * (its inner headers where the packet's were, gso_size kept: the segments' payload stays what
 * the writer chose), then the EtherType and the header written from offset 12 on, or with
 * key_in_frame the source address too, from offset 6.
 */
static void tap_encap(struct tcx_prog *g, const struct tcx_tap *t, bool key)
{
	unsigned len = ip_fixed_hlen(t->family) + (key ? 8u : 4u);
	unsigned from = t->key_in_frame ? ETH_ALEN : ETH_TYPE_OFF, before = ETH_HLEN - from;

	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_6);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, (int32_t)len);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_3, BPF_ADJ_ROOM_MAC);
	g->p[g->n++] =
		EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4,
			       (t->family == AF_INET6 ? BPF_F_ADJ_ROOM_ENCAP_L3_IPV6
						      : BPF_F_ADJ_ROOM_ENCAP_L3_IPV4) |
				       BPF_F_ADJ_ROOM_ENCAP_L4_GRE | BPF_F_ADJ_ROOM_FIXED_GSO);
	g->p[g->n++] = EBPF_CALL(BPF_FUNC_skb_adjust_room);
	jump_drop(g, BPF_JNE, BPF_REG_0, 0);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_6);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, (int32_t)from);
	g->p[g->n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_3, BPF_REG_10);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_ADD, BPF_REG_3, TCX_TAP_IP - (int32_t)before);
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4, (int32_t)(before + len));
	g->p[g->n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_5, 0);
	g->p[g->n++] = EBPF_CALL(BPF_FUNC_skb_store_bytes);
	jump_drop(g, BPF_JNE, BPF_REG_0, 0);
}

/*
 * The outer header of a frame whose EtherType is in r7: with t's key (or none), or with
 * key_in_frame as the frame's GRE flags say: two headers then, the first with a key, the
 * second without, and a jump from the end of the first past the second.
 */
static void tap_gre(struct tcx_prog *g, const struct tcx_tap *t)
{
	unsigned to_nokey, to_end;

	if (!t->key_in_frame) {
		tap_header(g, t, t->key);
		tap_encap(g, t, t->key);
		return;
	}
	g->p[g->n++] = EBPF_LD_ABS(BPF_H, TCX_TAP_FRAME_FLAGS);
	to_nokey = g->n;
	g->p[g->n++] = EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0);
	jump_drop(g, BPF_JNE, BPF_REG_0, GRE_BIT_K);
	tap_header(g, t, true);
	tap_encap(g, t, true);
	to_end = g->n;
	g->p[g->n++] = EBPF_JA(0);
	g->p[to_nokey].off = (int16_t)(g->n - to_nokey - 1);
	tap_header(g, t, false);
	tap_encap(g, t, false);
	g->p[to_end].off = (int16_t)(g->n - to_end - 1);
}

int tcx_tap_attach(int ifindex, const struct tcx_tap *t)
{
	struct tcx_prog g = { .n = 0 };

	if (!t->redirect && !t->gre)
		return -EINVAL;
	if (t->gre) {
		if (t->family != AF_INET && t->family != AF_INET6)
			return -EINVAL;
		/* r6 the context (legacy loads need it), r7 the frame's EtherType. */
		g.p[g.n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1);
		g.p[g.n++] = EBPF_LD_ABS(BPF_H, ETH_TYPE_OFF);
		g.p[g.n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_7, BPF_REG_0);
		g.p[g.n++] = EBPF_JMP_IMM(BPF_JEQ, BPF_REG_7, ETH_P_IP, 1);
		jump_drop(&g, BPF_JNE, BPF_REG_7, ETH_P_IPV6);
		tap_gre(&g, t);
	}
	if (t->redirect) {
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_1, t->redirect);
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, 0);
		g.p[g.n++] = EBPF_CALL(BPF_FUNC_redirect);
	} else {
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_NEXT);
	}
	g.p[g.n++] = EBPF_EXIT();
	/* The verifier refuses code no path reaches: a drop tail only where something jumps. */
	if (g.ndrop) {
		for (unsigned i = 0; i < g.ndrop; i++)
			g.p[g.to_drop[i]].off = (int16_t)(g.n - g.to_drop[i] - 1);
		g.p[g.n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_DROP);
		g.p[g.n++] = EBPF_EXIT();
	}
	return attach(ifindex, &g);
}

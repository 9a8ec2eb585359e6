/*
 * The tcx programs of progs.h: BPF_PROG_TYPE_SCHED_CLS, attached with BPF_LINK_CREATE. The
 * helpers' contracts are in uapi/linux/bpf.h; what bpf_skb_adjust_room does to a GSO skb is
 * in net/core/filter.c (bpf_skb_net_grow).
 */
#include "progs.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "byteorder.h"
#include "ebpf.h"
#include "frame.h"
#include "gre.h"
#include "inet.h"

enum {
	PROG_INSNS_MAX = 64,
	ENCAP_LEN = IPV4_HLEN + GRE_HLEN_MIN, /* what the GRE program puts after Ethernet */
	HDR = -ENCAP_LEN,		      /* the header's place on the stack, from r10 */
};

/* d = d as a 16-bit big-endian number (BPF_END: the byte swap, where the host needs one). */
#define EBPF_TO_BE16(d) EBPF_INSN(BPF_ALU | BPF_END | BPF_TO_BE, (d), 0, 0, 16)

/* The host-order word whose bytes in memory are p[0..3]: what a 32-bit store writes. */
static int32_t word(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return (int32_t)w;
}

/*
 * The outer header on the stack: IPv4 (total length from skb->len, checksum by
 * bpf_csum_diff over it) and GRE without options carrying IPv4. A packet too long for it, its
 * total length past 16 bits, to the tail at drop.
 */
static unsigned gre_header(struct bpf_insn *p, unsigned n, const struct progs_tap *t, unsigned drop)
{
	uint8_t w[ENCAP_LEN] = { 0x45 };

	store_be16(w + IPV4_FRAG_OFF, IPV4_DF);
	w[IPV4_TTL_OFF] = 64;
	w[IPV4_PROTO_OFF] = IPPROTO_GRE_NUM;
	memcpy(w + IPV4_SRC_OFF, t->src, 4);
	memcpy(w + IPV4_DST_OFF, t->dst, 4);
	store_be16(w + IPV4_HLEN + GRE_PROTO_OFF, GRE_PROTO_IPV4);
	for (unsigned i = 0; i < ENCAP_LEN; i += 4)
		p[n++] = EBPF_ST_MEM(BPF_W, BPF_REG_10, HDR + (int)i, word(w + i));
	/* skb->len counts the Ethernet header: the outer packet is the rest and the header. */
	p[n++] = EBPF_LDX_MEM(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct __sk_buff, len));
	p[n] = EBPF_JMP_IMM(BPF_JGT, BPF_REG_2, FRAME_LEN_MAX - ENCAP_LEN, (int16_t)(drop - n - 1));
	n++;
	p[n++] = EBPF_ALU64_IMM(BPF_ADD, BPF_REG_2, ENCAP_LEN - ETH_HLEN);
	p[n++] = EBPF_TO_BE16(BPF_REG_2);
	p[n++] = EBPF_STX_MEM(BPF_H, BPF_REG_10, BPF_REG_2, HDR + IPV4_TOT_LEN_OFF);
	/* r0 = the 32-bit sum of the IPv4 header (its checksum field 0), folded to 16 bits,
	 * inverted: stored as it is, in the header's byte order, as the kernel stores one. */
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_1, 0);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, 0);
	p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_3, BPF_REG_10);
	p[n++] = EBPF_ALU64_IMM(BPF_ADD, BPF_REG_3, HDR);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4, IPV4_HLEN);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_5, 0);
	p[n++] = EBPF_CALL(BPF_FUNC_csum_diff);
	for (unsigned i = 0; i < 2; i++) {
		p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_0);
		p[n++] = EBPF_ALU64_IMM(BPF_RSH, BPF_REG_1, 16);
		p[n++] = EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, 0xffff);
		p[n++] = EBPF_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1);
	}
	p[n++] = EBPF_ALU64_IMM(BPF_XOR, BPF_REG_0, 0xffff);
	p[n++] = EBPF_STX_MEM(BPF_H, BPF_REG_10, BPF_REG_0, HDR + IPV4_CSUM_OFF);
	return n;
}

/*
 * Room for the header after the Ethernet header, the skb marked as GRE over IPv4 (its inner
 * headers where the packet's were, gso_size kept: the segments' payload stays what the
 * writer chose), then the header written there. On a failure, to the tail at drop.
 */
static unsigned gre_encap(struct bpf_insn *p, unsigned n, unsigned drop)
{
	p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_6);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, ENCAP_LEN);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_3, BPF_ADJ_ROOM_MAC);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4,
				BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 | BPF_F_ADJ_ROOM_ENCAP_L4_GRE |
					BPF_F_ADJ_ROOM_FIXED_GSO);
	p[n++] = EBPF_CALL(BPF_FUNC_skb_adjust_room);
	p[n] = EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, 0, (int16_t)(drop - n - 1));
	n++;
	p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_1, BPF_REG_6);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, ETH_HLEN);
	p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_3, BPF_REG_10);
	p[n++] = EBPF_ALU64_IMM(BPF_ADD, BPF_REG_3, HDR);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4, ENCAP_LEN);
	p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_5, 0);
	p[n++] = EBPF_CALL(BPF_FUNC_skb_store_bytes);
	p[n] = EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, 0, (int16_t)(drop - n - 1));
	n++;
	return n;
}

static int attach(int ifindex, const struct bpf_insn *p, unsigned n)
{
	int prog = ebpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, p, n), link;

	if (prog < 0)
		return prog;
	link = ebpf_link_create(prog, ifindex, EBPF_ATTACH_TCX_INGRESS, 0);
	close(prog); /* the link holds the program */
	return link;
}

int progs_tap_attach(int ifindex, const struct progs_tap *t)
{
	struct bpf_insn p[PROG_INSNS_MAX];
	/* The GRE program's length up to its drop tail: 6 stores, 5 for the length, 7 for the
	 * sum, 8 to fold it, 2 to store it; 14 to encapsulate; then redirect or pass, and exit. */
	unsigned n = 0, drop = 1 + 6 + 5 + 7 + 8 + 2 + 14 + (t->redirect ? 4 : 2);

	if (!t->redirect && !t->gre)
		return -EINVAL;
	if (t->gre) {
		p[n++] = EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1);
		n = gre_header(p, n, t, drop);
		n = gre_encap(p, n, drop);
	}
	if (t->redirect) {
		p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_1, t->redirect);
		p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_2, 0);
		p[n++] = EBPF_CALL(BPF_FUNC_redirect);
	} else {
		p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_NEXT);
	}
	p[n++] = EBPF_EXIT();
	if (t->gre) {
		if (n != drop)
			return -EINVAL; /* the count above is wrong: a bug, caught here */
		p[n++] = EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_DROP);
		p[n++] = EBPF_EXIT();
	}
	return attach(ifindex, p, n);
}

int progs_drop_attach(int ifindex)
{
	/* Legacy loads from the Ethernet header, r6 the context; the UDP port behind an IPv4
	 * header of any length (r7 its length, from IHL). Tails: drop at 12, next at 14. */
	const struct bpf_insn p[] = {
		EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1),
		EBPF_LD_ABS(BPF_H, ETH_TYPE_OFF),
		EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, ETH_P_IP, 11),
		EBPF_LD_ABS(BPF_B, ETH_HLEN + IPV4_PROTO_OFF),
		EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_GRE_NUM, 7),
		EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_UDP, 8),
		EBPF_LD_ABS(BPF_B, ETH_HLEN),
		EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, 0x0f),
		EBPF_ALU64_IMM(BPF_LSH, BPF_REG_0, 2),
		EBPF_ALU64_REG(BPF_MOV, BPF_REG_7, BPF_REG_0),
		EBPF_LD_IND(BPF_H, BPF_REG_7, ETH_HLEN + UDP_DPORT_OFF),
		EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, FRAME_UDP_PORT, 2),
		EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_DROP),
		EBPF_EXIT(),
		EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_NEXT),
		EBPF_EXIT(),
	};

	return attach(ifindex, p, sizeof(p) / sizeof(p[0]));
}

/*
 * The inner flow's worker, by BPF (see steer.h): one program, built for two places (where the
 * inner packet starts differs), sharing one flow table.
 */
#include "steer.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ebpf.h"
#include "inet.h"

enum { MIX = 0x9e3779b1u /* Fibonacci hashing: 2^32 / the golden ratio */ };

int steer_maps_create(struct steer_maps *m)
{
	m->flows = ebpf_map_create(BPF_MAP_TYPE_LRU_HASH, sizeof(uint32_t), sizeof(uint32_t),
				   STEER_FLOWS);
	if (m->flows < 0) {
		int rc = m->flows;

		m->next = -1;
		return rc;
	}
	m->next = ebpf_map_create(BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(uint32_t), 1);
	if (m->next < 0) {
		int rc = m->next;

		close(m->flows);
		m->flows = -1;
		return rc;
	}
	return 0;
}

void steer_maps_close(struct steer_maps *m)
{
	if (m->flows >= 0)
		close(m->flows);
	if (m->next >= 0)
		close(m->next);
	m->flows = m->next = -1;
}

/* The stack slots of the program: the flow's key, the turn counter's key, the worker. */
enum { FP_KEY = -4, FP_ZERO = -8, FP_WORKER = -12 };

/*
 * Writes the program into p (STEER_INSNS at most) and returns its length. The inner packet
 * starts at byte B of what the program sees. r6: the packet (legacy loads need it there); r7:
 * the hash; r8: IPv4 header length. Jumps count the instructions between.
 */
static unsigned build(struct bpf_insn *p, int B, const struct steer_maps *m, unsigned n,
		      bool outer_gre)
{
	int flows = m ? m->flows : -1, next = m ? m->next : -1;
	/* The rings' group sees every packet of the interface: only GRE (the outer IPv4
	 * protocol or IPv6 next header) may reach the table, anything else goes to the first
	 * ring, whose filter drops it. */
	const struct bpf_insn only_gre[] = {
		/* 0 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1),
		/* 1 */ EBPF_LD_ABS(BPF_B, 0),
		/* 2 */ EBPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 4),
		/* 3 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 4, 2), /* to 6 */
		/* 4 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 6, 3), /* to 8 */
		/* 5 */ EBPF_JA(4),				/* to 10 */
		/* 6 */ EBPF_LD_ABS(BPF_B, IPV4_PROTO_OFF),
		/* 7 */ EBPF_JA(1), /* to 9 */
		/* 8 */ EBPF_LD_ABS(BPF_B, IPV6_NEXT_OFF),
		/* 9 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_GRE_NUM, 2), /* to 12 */
		/* 10 */ EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, 0),
		/* 11 */ EBPF_EXIT(),
		/* 12: the hash follows, from its second instruction */
	};
	const struct bpf_insn hash[] = {
		/* 0 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1),
		/* 1 */ EBPF_ALU64_IMM(BPF_MOV, BPF_REG_7, 0),
		/* 2 */ EBPF_LD_ABS(BPF_B, B),
		/* 3 */ EBPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 4),
		/* 4 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 6, 18), /* IPv6: to 23 */
		/* IPv4: r7 = src ^ dst; ports when TCP or UDP and not a later fragment */
		/* 5 */ EBPF_LD_ABS(BPF_W, B + IPV4_SRC_OFF),
		/* 6 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 7 */ EBPF_LD_ABS(BPF_W, B + IPV4_DST_OFF),
		/* 8 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 9 */ EBPF_LD_ABS(BPF_H, B + IPV4_FRAG_OFF),
		/* 10 */ EBPF_JMP_IMM(BPF_JSET, BPF_REG_0, IPV4_MF | IPV4_OFFMASK, 35), /* to 46 */
		/* 11 */ EBPF_LD_ABS(BPF_B, B + IPV4_PROTO_OFF),
		/* 12 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_TCP, 1),  /* to 14 */
		/* 13 */ EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_UDP, 32), /* to 46 */
		/* 14 */ EBPF_LD_ABS(BPF_B, B),
		/* 15 */ EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, 0x0f),
		/* 16 */ EBPF_ALU64_IMM(BPF_LSH, BPF_REG_0, 2),
		/* 17 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_8, BPF_REG_0),
		/* 18 */ EBPF_LD_IND(BPF_H, BPF_REG_8, B + L4_SPORT_OFF),
		/* 19 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 20 */ EBPF_LD_IND(BPF_H, BPF_REG_8, B + L4_DPORT_OFF),
		/* 21 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 22 */ EBPF_JA(23), /* to 46 */
		/* IPv6: r7 = the XOR of the eight address words; ports when TCP or UDP follow
		 * the fixed header */
		/* 23 */ EBPF_LD_ABS(BPF_W, B + IPV6_SRC_OFF),
		/* 24 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 25 */ EBPF_LD_ABS(BPF_W, B + IPV6_SRC_OFF + 4),
		/* 26 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 27 */ EBPF_LD_ABS(BPF_W, B + IPV6_SRC_OFF + 8),
		/* 28 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 29 */ EBPF_LD_ABS(BPF_W, B + IPV6_SRC_OFF + 12),
		/* 30 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 31 */ EBPF_LD_ABS(BPF_W, B + IPV6_DST_OFF),
		/* 32 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 33 */ EBPF_LD_ABS(BPF_W, B + IPV6_DST_OFF + 4),
		/* 34 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 35 */ EBPF_LD_ABS(BPF_W, B + IPV6_DST_OFF + 8),
		/* 36 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 37 */ EBPF_LD_ABS(BPF_W, B + IPV6_DST_OFF + 12),
		/* 38 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 39 */ EBPF_LD_ABS(BPF_B, B + IPV6_NEXT_OFF),
		/* 40 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_TCP, 1), /* to 42 */
		/* 41 */ EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_UDP, 4), /* to 46 */
		/* 42 */ EBPF_LD_ABS(BPF_H, B + IPV6_HLEN + L4_SPORT_OFF),
		/* 43 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 44 */ EBPF_LD_ABS(BPF_H, B + IPV6_HLEN + L4_DPORT_OFF),
		/* 45 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* Both: r7 = (u32)(r7 * MIX), the flow's key */
		/* 46 */ EBPF_ALU32_IMM(BPF_MUL, BPF_REG_7, (int32_t)MIX),
	};
	/* By the hash alone: its middle bits modulo the workers. */
	const struct bpf_insn by_hash[] = {
		EBPF_ALU64_REG(BPF_MOV, BPF_REG_0, BPF_REG_7),
		EBPF_ALU32_IMM(BPF_RSH, BPF_REG_0, 16),
		EBPF_ALU32_IMM(BPF_MOD, BPF_REG_0, (int32_t)n),
		EBPF_EXIT(),
	};
	/* By the flow table: a known flow keeps its worker; a new one takes the next worker in
	 * turn (the counter's old value modulo the workers), and is remembered. The table forgets
	 * the flows least recently seen first (LRU). Without the counter, by the hash. */
	const struct bpf_insn by_table[] = {
		/* 0 */ EBPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_7, FP_KEY),
		/* 1 */ EBPF_LD_MAP_FD(BPF_REG_1, flows),
		/* 3 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_2, BPF_REG_10),
		/* 4 */ EBPF_ALU64_IMM(BPF_ADD, BPF_REG_2, FP_KEY),
		/* 5 */ EBPF_CALL(BPF_FUNC_map_lookup_elem),
		/* 6 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2), /* new: to 9 */
		/* 7 */ EBPF_LDX_MEM(BPF_W, BPF_REG_0, BPF_REG_0, 0),
		/* 8 */ EBPF_EXIT(),
		/* 9 */ EBPF_ST_MEM(BPF_W, BPF_REG_10, FP_ZERO, 0),
		/* 10 */ EBPF_LD_MAP_FD(BPF_REG_1, next),
		/* 12 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_2, BPF_REG_10),
		/* 13 */ EBPF_ALU64_IMM(BPF_ADD, BPF_REG_2, FP_ZERO),
		/* 14 */ EBPF_CALL(BPF_FUNC_map_lookup_elem),
		/* 15 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 14), /* no counter: to 30 */
		/* 16 */ EBPF_ALU64_IMM(BPF_MOV, BPF_REG_1, 1),
		/* 17 */ EBPF_FETCH_ADD(BPF_W, BPF_REG_0, BPF_REG_1, 0),
		/* 18 */ EBPF_ALU32_IMM(BPF_MOD, BPF_REG_1, (int32_t)n),
		/* 19 */ EBPF_STX_MEM(BPF_W, BPF_REG_10, BPF_REG_1, FP_WORKER),
		/* 20 */ EBPF_LD_MAP_FD(BPF_REG_1, flows),
		/* 22 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_2, BPF_REG_10),
		/* 23 */ EBPF_ALU64_IMM(BPF_ADD, BPF_REG_2, FP_KEY),
		/* 24 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_3, BPF_REG_10),
		/* 25 */ EBPF_ALU64_IMM(BPF_ADD, BPF_REG_3, FP_WORKER),
		/* 26 */ EBPF_ALU64_IMM(BPF_MOV, BPF_REG_4, BPF_ANY),
		/* 27 */ EBPF_CALL(BPF_FUNC_map_update_elem),
		/* 28 */ EBPF_LDX_MEM(BPF_W, BPF_REG_0, BPF_REG_10, FP_WORKER),
		/* 29 */ EBPF_EXIT(),
		/* 30: by_hash follows */
	};
	unsigned len = 0;

	/* With the prologue, past the hash's first instruction: the prologue set r6, and its
	 * loads scratched r1. */
	if (outer_gre) {
		memcpy(p, only_gre, sizeof(only_gre));
		len += sizeof(only_gre) / sizeof(only_gre[0]);
	}
	memcpy(p + len, hash + outer_gre, sizeof(hash) - outer_gre * sizeof(hash[0]));
	len += sizeof(hash) / sizeof(hash[0]) - outer_gre;
	if (flows >= 0 && next >= 0) {
		memcpy(p + len, by_table, sizeof(by_table));
		len += sizeof(by_table) / sizeof(by_table[0]);
	}
	memcpy(p + len, by_hash, sizeof(by_hash));
	return len + sizeof(by_hash) / sizeof(by_hash[0]);
}

int steer_reuseport_attach(int fd, unsigned gre_hlen, const struct steer_maps *m, unsigned n)
{
	struct bpf_insn prog[STEER_INSNS];
	unsigned len;
	int prog_fd, rc = 0;

	if (n == 0)
		return -EINVAL;
	/* The program sees the UDP payload: the GRE header, then the inner packet. */
	len = build(prog, (int)gre_hlen, m, n, false);
	prog_fd = ebpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, prog, len);
	if (prog_fd < 0)
		return prog_fd;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog_fd, sizeof(prog_fd)) < 0)
		rc = -errno;
	close(prog_fd);
	return rc;
}

int steer_fanout_load(unsigned outer_hlen, const struct steer_maps *m, unsigned n)
{
	struct bpf_insn prog[STEER_INSNS];
	unsigned len;

	if (n == 0)
		return -EINVAL;
	/* The program sees the packet from its outer IP header. */
	len = build(prog, (int)outer_hlen, m, n, true);
	return ebpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, prog, len);
}

int steer_tun_load(const struct steer_maps *m, unsigned n)
{
	struct bpf_insn prog[STEER_INSNS];
	unsigned len;

	if (n == 0)
		return -EINVAL;
	len = build(prog, 0, m, n, false);
	return ebpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, prog, len);
}

int steer_tun_attach(int tun_fd, int prog_fd)
{
	if (ioctl(tun_fd, TUNSETSTEERINGEBPF, &prog_fd) < 0)
		return -errno;
	return 0;
}

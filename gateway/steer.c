/*
 * The inner flow's worker, by BPF (see steer.h). The two programs compute the same number:
 * change one, change the other.
 */
#include "steer.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ebpf.h"
#include "inet.h"

enum { MIX = 0x9e3779b1u /* Fibonacci hashing: 2^32 / the golden ratio */ };

int steer_reuseport_attach(int fd, unsigned gre_hlen, unsigned n)
{
	/* The program sees the UDP payload: the GRE header, then the inner packet at G. */
	const unsigned G = gre_hlen;
	struct sock_filter prog[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, G),
		/* 1 */ BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 4),
		/* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 15, 0),
		/* IPv4: M0 = src ^ dst; ports when TCP or UDP (a later fragment has none). */
		/* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV4_SRC_OFF),
		/* 4 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 5 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV4_DST_OFF),
		/* 6 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 7 */ BPF_STMT(BPF_ST, 0),
		/* 8 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, G + IPV4_FRAG_OFF),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, IPV4_MF | IPV4_OFFMASK, 42, 0),
		/* 10 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, G + IPV4_PROTO_OFF),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 1, 0),
		/* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 39),
		/* 13 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, G),
		/* 14 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, G + L4_SPORT_OFF),
		/* 15 */ BPF_STMT(BPF_ST, 1),
		/* 16 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, G + L4_DPORT_OFF),
		/* 17 */ BPF_STMT(BPF_JMP | BPF_JA, 29),
		/* IPv6: M0 = the XOR of the eight address words; ports when TCP or UDP follow
		 * the fixed header. */
		/* 18 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_SRC_OFF),
		/* 19 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 20 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_SRC_OFF + 4),
		/* 21 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 22 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 23 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_SRC_OFF + 8),
		/* 24 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 25 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 26 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_SRC_OFF + 12),
		/* 27 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 28 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 29 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_DST_OFF),
		/* 30 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 31 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 32 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_DST_OFF + 4),
		/* 33 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 34 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 35 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_DST_OFF + 8),
		/* 36 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 37 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 38 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + IPV6_DST_OFF + 12),
		/* 39 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 40 */ BPF_STMT(BPF_ST, 0),
		/* 41 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, G + IPV6_NEXT_OFF),
		/* 42 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 1, 0),
		/* 43 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 8),
		/* 44 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, G + IPV6_HLEN + L4_SPORT_OFF),
		/* 45 */ BPF_STMT(BPF_ST, 1),
		/* 46 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, G + IPV6_HLEN + L4_DPORT_OFF),
		/* Both: A = sport ^ dport ^ M0 (M1 holds sport). */
		/* 47 */ BPF_STMT(BPF_LDX | BPF_MEM, 1),
		/* 48 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 49 */ BPF_STMT(BPF_LDX | BPF_MEM, 0),
		/* 50 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 51 */ BPF_STMT(BPF_ST, 0),
		/* Mix (Fibonacci hashing: the low bits of ports that connect() keeps even must
		 * count too) and take the middle bits modulo the number of sockets. */
		/* 52 */ BPF_STMT(BPF_LD | BPF_MEM, 0),
		/* 53 */ BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, MIX),
		/* 54 */ BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 16),
		/* 55 */ BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		/* 56 */ BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };

	if (n == 0)
		return -EINVAL;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fprog, sizeof(fprog)) < 0)
		return -errno;
	return 0;
}

int steer_tun_load(void)
{
	/* r6: the packet (legacy loads need it there); r7: the hash; r8: IPv4 header length.
	 * Offsets as the classic program's with the inner packet at 0. Jumps count the
	 * instructions between. */
	const struct bpf_insn prog[] = {
		/* 0 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_6, BPF_REG_1),
		/* 1 */ EBPF_ALU64_IMM(BPF_MOV, BPF_REG_7, 0),
		/* 2 */ EBPF_LD_ABS(BPF_B, 0),
		/* 3 */ EBPF_ALU64_IMM(BPF_RSH, BPF_REG_0, 4),
		/* 4 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 6, 18), /* IPv6: to 23 */
		/* IPv4: r7 = src ^ dst; ports when TCP or UDP and not a later fragment */
		/* 5 */ EBPF_LD_ABS(BPF_W, IPV4_SRC_OFF),
		/* 6 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 7 */ EBPF_LD_ABS(BPF_W, IPV4_DST_OFF),
		/* 8 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 9 */ EBPF_LD_ABS(BPF_H, IPV4_FRAG_OFF),
		/* 10 */ EBPF_JMP_IMM(BPF_JSET, BPF_REG_0, IPV4_MF | IPV4_OFFMASK, 35), /* to 46 */
		/* 11 */ EBPF_LD_ABS(BPF_B, IPV4_PROTO_OFF),
		/* 12 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_TCP, 1),  /* to 14 */
		/* 13 */ EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_UDP, 32), /* to 46 */
		/* 14 */ EBPF_LD_ABS(BPF_B, 0),
		/* 15 */ EBPF_ALU64_IMM(BPF_AND, BPF_REG_0, 0x0f),
		/* 16 */ EBPF_ALU64_IMM(BPF_LSH, BPF_REG_0, 2),
		/* 17 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_8, BPF_REG_0),
		/* 18 */ EBPF_LD_IND(BPF_H, BPF_REG_8, L4_SPORT_OFF),
		/* 19 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 20 */ EBPF_LD_IND(BPF_H, BPF_REG_8, L4_DPORT_OFF),
		/* 21 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 22 */ EBPF_JA(23), /* to 46 */
		/* IPv6: r7 = the XOR of the eight address words; ports when TCP or UDP follow
		 * the fixed header */
		/* 23 */ EBPF_LD_ABS(BPF_W, IPV6_SRC_OFF),
		/* 24 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 25 */ EBPF_LD_ABS(BPF_W, IPV6_SRC_OFF + 4),
		/* 26 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 27 */ EBPF_LD_ABS(BPF_W, IPV6_SRC_OFF + 8),
		/* 28 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 29 */ EBPF_LD_ABS(BPF_W, IPV6_SRC_OFF + 12),
		/* 30 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 31 */ EBPF_LD_ABS(BPF_W, IPV6_DST_OFF),
		/* 32 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 33 */ EBPF_LD_ABS(BPF_W, IPV6_DST_OFF + 4),
		/* 34 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 35 */ EBPF_LD_ABS(BPF_W, IPV6_DST_OFF + 8),
		/* 36 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 37 */ EBPF_LD_ABS(BPF_W, IPV6_DST_OFF + 12),
		/* 38 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 39 */ EBPF_LD_ABS(BPF_B, IPV6_NEXT_OFF),
		/* 40 */ EBPF_JMP_IMM(BPF_JEQ, BPF_REG_0, IPPROTO_TCP, 1), /* to 42 */
		/* 41 */ EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, IPPROTO_UDP, 4), /* to 46 */
		/* 42 */ EBPF_LD_ABS(BPF_H, IPV6_HLEN + L4_SPORT_OFF),
		/* 43 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* 44 */ EBPF_LD_ABS(BPF_H, IPV6_HLEN + L4_DPORT_OFF),
		/* 45 */ EBPF_ALU64_REG(BPF_XOR, BPF_REG_7, BPF_REG_0),
		/* Both: r0 = (u32)(r7 * MIX) >> 16; TUN takes it modulo its queues */
		/* 46 */ EBPF_ALU64_REG(BPF_MOV, BPF_REG_0, BPF_REG_7),
		/* 47 */ EBPF_ALU32_IMM(BPF_MUL, BPF_REG_0, (int32_t)MIX),
		/* 48 */ EBPF_ALU32_IMM(BPF_RSH, BPF_REG_0, 16),
		/* 49 */ EBPF_EXIT(),
	};
	return ebpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, prog, sizeof(prog) / sizeof(prog[0]));
}

int steer_tun_attach(int tun_fd, int prog_fd)
{
	if (ioctl(tun_fd, TUNSETSTEERINGEBPF, &prog_fd) < 0)
		return -errno;
	return 0;
}

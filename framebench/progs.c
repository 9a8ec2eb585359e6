/*
 * The tcx program of progs.h: BPF_PROG_TYPE_SCHED_CLS, attached with BPF_LINK_CREATE.
 */
#include "progs.h"

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <unistd.h>

#include "ebpf.h"
#include "gre.h"
#include "inet.h"

static int attach(int ifindex, const struct bpf_insn *p, unsigned n)
{
	int prog = ebpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, p, n), link;

	if (prog < 0)
		return prog;
	link = ebpf_link_create(prog, ifindex, EBPF_ATTACH_TCX_INGRESS, 0);
	close(prog); /* the link holds the program */
	return link;
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
		EBPF_JMP_IMM(BPF_JNE, BPF_REG_0, GRE_UDP_PORT, 2),
		EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_DROP),
		EBPF_EXIT(),
		EBPF_ALU64_IMM(BPF_MOV, BPF_REG_0, EBPF_TCX_NEXT),
		EBPF_EXIT(),
	};

	return attach(ifindex, p, sizeof(p) / sizeof(p[0]));
}

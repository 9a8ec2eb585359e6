/*
 * The GRE drop at tc ingress (see tcx.h): a BPF_PROG_TYPE_SCHED_CLS program of legacy loads
 * from the Ethernet header on, attached with BPF_LINK_CREATE.
 */
#include "tcx.h"

#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "byteorder.h"
#include "ebpf.h"
#include "inet.h"

enum {
	/* The longest program, IPv6's: 1 + 2 + 2 + 3 + 2 * 2 * 4 + 2 + 2 (tcx_gre_drop_attach). */
	TCX_INSNS_MAX = 28,
};

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

/*
 * eBPF programs written out as instructions (uapi/linux/bpf.h: struct bpf_insn), as the tools
 * load them without a compiler or libbpf: gregw's TUN steering program and GRE drop at tc
 * ingress, tunbed-framebench's redirect to an AF_XDP socket.
 */
#ifndef TUNBED_GW_EBPF_H
#define TUNBED_GW_EBPF_H

#include <linux/bpf.h>

enum {
	/* Newer than the uapi headers this builds with (Linux 6.1's): tcx (Linux 6.6), its
	 * attach type in enum bpf_attach_type (BPF_TCX_INGRESS) and its verdicts. */
	EBPF_ATTACH_TCX_INGRESS = 46,
	EBPF_TCX_NEXT = -1, /* TCX_NEXT: on to other programs, then the stack */
	EBPF_TCX_DROP = 2,  /* TCX_DROP */
};

#define EBPF_INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
/* r0 = the packet's bytes at off, big-endian, as a host number (legacy load: r6 the ctx). */
#define EBPF_LD_ABS(size, off)	    EBPF_INSN(BPF_LD | BPF_ABS | (size), 0, 0, 0, (off))
#define EBPF_LD_IND(size, reg, off) EBPF_INSN(BPF_LD | BPF_IND | (size), 0, (reg), 0, (off))
#define EBPF_ALU64_IMM(op, d, i)    EBPF_INSN(BPF_ALU64 | (op) | BPF_K, (d), 0, 0, (i))
#define EBPF_ALU64_REG(op, d, s)    EBPF_INSN(BPF_ALU64 | (op) | BPF_X, (d), (s), 0, 0)
#define EBPF_ALU32_IMM(op, d, i)    EBPF_INSN(BPF_ALU | (op) | BPF_K, (d), 0, 0, (i))
#define EBPF_JMP_IMM(op, d, i, o)   EBPF_INSN(BPF_JMP | (op) | BPF_K, (d), 0, (o), (i))
/* Compares the low 32 bits (an address word), where a 64-bit compare would sign-extend imm. */
#define EBPF_JMP32_IMM(op, d, i, o) EBPF_INSN(BPF_JMP32 | (op) | BPF_K, (d), 0, (o), (i))
#define EBPF_JA(o)		    EBPF_INSN(BPF_JMP | BPF_JA, 0, 0, (o), 0)
#define EBPF_EXIT()		    EBPF_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define EBPF_CALL(fn)		    EBPF_INSN(BPF_JMP | BPF_CALL, 0, 0, 0, (fn))
/* d = the map of fd (two instructions: a 64-bit immediate). */
#define EBPF_LD_MAP_FD(d, fd)                                                  \
	EBPF_INSN(BPF_LD | BPF_DW | BPF_IMM, (d), BPF_PSEUDO_MAP_FD, 0, (fd)), \
		EBPF_INSN(0, 0, 0, 0, 0)
#define EBPF_LDX_MEM(size, d, s, o) EBPF_INSN(BPF_LDX | BPF_MEM | (size), (d), (s), (o), 0)
#define EBPF_STX_MEM(size, d, s, o) EBPF_INSN(BPF_STX | BPF_MEM | (size), (d), (s), (o), 0)
#define EBPF_ST_MEM(size, d, o, i)  EBPF_INSN(BPF_ST | BPF_MEM | (size), (d), 0, (o), (i))
/* s = the old value of *(d + o), which gets s added, atomically (Linux 5.12). */
#define EBPF_FETCH_ADD(size, d, s, o) \
	EBPF_INSN(BPF_STX | BPF_ATOMIC | (size), (d), (s), (o), BPF_ADD | BPF_FETCH)

/* Loads n instructions as a program of type. Returns its fd or -errno. Setup only. */
int ebpf_prog_load(enum bpf_prog_type type, const struct bpf_insn *insns, unsigned n);

/*
 * Loads n instructions as a program of type for attach_type (enum bpf_attach_type, as an
 * unsigned: some are newer than the uapi headers this builds with), which programs such as
 * XDP's must name for a link. Returns its fd or -errno. Setup only.
 */
int ebpf_prog_load_for(enum bpf_prog_type type, unsigned attach_type, const struct bpf_insn *insns,
		       unsigned n);

/*
 * Attaches prog to the interface ifindex at attach_type (BPF_XDP with flags XDP_FLAGS_*;
 * tcx's ingress), by a BPF link: the attachment goes when the link's fd closes, also when the
 * process dies. Returns the link's fd or -errno (EEXIST: an XDP program is already attached;
 * EINVAL: the kernel knows no such attach type). Setup only.
 */
int ebpf_link_create(int prog, int ifindex, unsigned attach_type, unsigned flags);

/* Creates a map of type with max entries of key_size and value_size bytes. Returns its fd or
 * -errno. Setup only. */
int ebpf_map_create(enum bpf_map_type type, unsigned key_size, unsigned value_size, unsigned max);

/* Stores value at key in the map of fd (sizes as created). Returns 0 or -errno. */
int ebpf_map_update(int fd, const void *key, const void *value);

#endif

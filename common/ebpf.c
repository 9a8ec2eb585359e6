/*
 * Loading the eBPF programs of ebpf.h with the bpf(2) system call.
 */
#include "ebpf.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int ebpf_prog_load(enum bpf_prog_type type, const struct bpf_insn *insns, unsigned n)
{
	return ebpf_prog_load_for(type, 0, insns, n);
}

int ebpf_prog_load_for(enum bpf_prog_type type, unsigned attach_type, const struct bpf_insn *insns,
		       unsigned n)
{
	static const char license[] = "GPL";
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = type;
	attr.expected_attach_type = attach_type;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = n;
	attr.license = (uint64_t)(uintptr_t)license;
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int ebpf_map_create(enum bpf_map_type type, unsigned key_size, unsigned value_size, unsigned max)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = type;
	attr.key_size = key_size;
	attr.value_size = value_size;
	attr.max_entries = max;
	fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int ebpf_link_create(int prog, int ifindex, unsigned attach_type, unsigned flags)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = (uint32_t)prog;
	attr.link_create.target_ifindex = (uint32_t)ifindex;
	attr.link_create.attach_type = attach_type;
	attr.link_create.flags = flags;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int ebpf_map_update(int fd, const void *key, const void *value)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)fd;
	attr.key = (uint64_t)(uintptr_t)key;
	attr.value = (uint64_t)(uintptr_t)value;
	attr.flags = BPF_ANY;
	return syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &attr, sizeof(attr)) < 0 ? -errno : 0;
}

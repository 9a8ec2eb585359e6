/*
 * gregw's privileges after setup (see priv.h): common/privs.c gives them up; this file holds
 * gregw's own seccomp allow-list. After setup the workers move packets on
 * descriptors they hold (TUN queues, raw, packet and UDP sockets, rings) and the main thread
 * answers on its own (signalfd, timerfd, the control socket): none of it needs a capability.
 * The TUN device, and its routes with it, go when the last queue is closed: no capability
 * either.
 */
#include "priv.h"

#include <jansson.h>

#ifdef TUNBED_SECCOMP
#include <fcntl.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#endif

#include "log.h"
#include "privs.h"

#ifdef TUNBED_SECCOMP
/*
 * The system calls gregw makes once set up, every thread of it, in every data path mode
 * (strace -f of both gateways of ras.topo through transfers both ways, too-big pings, stats,
 * flows and an unknown command on the control socket, the interval lines, SIGTERM and the
 * exit), and the error paths beside them; each allowed without conditions but those below.
 */
static const int allowed[] = {
	/* Workers: TUN reads and writes (readv/writev with a virtio header), the raw, packet
	 * and UDP sockets, the ring's wake-ups, the stop eventfd, the idle poll. */
	SCMP_SYS(read),
	SCMP_SYS(readv),
	SCMP_SYS(write),
	SCMP_SYS(writev),
	SCMP_SYS(sendmmsg),
	SCMP_SYS(sendmsg),
	SCMP_SYS(sendto),
	SCMP_SYS(recvmmsg),
	SCMP_SYS(recvmsg),
	SCMP_SYS(recvfrom),
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	/* --tun-io uring: submitting the TUN reads. Its ring, made before, may do nothing but
	 * read into the slots (tun_uring.c: its restrictions), and no io_uring_setup or
	 * io_uring_register is allowed. */
	SCMP_SYS(io_uring_enter),
	SCMP_SYS(restart_syscall), /* a poll the debugger or a stop interrupted */
	/* The UDP socket's drops (SO_MEMINFO), the ring's (PACKET_STATISTICS); a worker that
	 * meets EIO on UDP_SEGMENT stops using it (no call). */
	SCMP_SYS(getsockopt),
	/* The main loop: control clients, /proc/PID/task/TID/stat for the stats, the
	 * workers' scheduling (SCHED_BATCH), their thread ids. */
	SCMP_SYS(accept4),
	SCMP_SYS(shutdown),
	SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
	SCMP_SYS(lseek),
	SCMP_SYS(fcntl),
	SCMP_SYS(sched_setscheduler),
	SCMP_SYS(sched_getscheduler),
	SCMP_SYS(sched_getparam),
	SCMP_SYS(sched_setparam),
	SCMP_SYS(getpid),
	SCMP_SYS(gettid),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep),
	SCMP_SYS(sched_yield),
	/* Threads: starting the workers (glibc's clone3, or clone), their start and end,
	 * joining them. */
	SCMP_SYS(clone3),
	SCMP_SYS(clone),
	SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq),
	SCMP_SYS(sched_setaffinity),
	SCMP_SYS(sched_getaffinity),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigaction),
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(sigaltstack),
	SCMP_SYS(futex),
	SCMP_SYS(madvise),
	SCMP_SYS(mprotect),
	SCMP_SYS(exit),
	/* Memory: malloc and free (mmap below). */
	SCMP_SYS(brk),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(getrandom),
	/* The end: the control socket's file, the rings, every descriptor, the process. */
	SCMP_SYS(unlink),
	SCMP_SYS(unlinkat),
	SCMP_SYS(close),
	SCMP_SYS(exit_group),
};

static int add_rules(void *ctx)
{
	int rc;

	/* Files only to read (/proc/PID/task/TID/stat): gregw is still uid 0, the owner of
	 * most of the system's files, so it may neither write nor create one. */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
			      SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY));
	/* isatty on stdout (stdio, before its first interval line). */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_EQ, TCGETS));
	return rc;
}

#endif

int priv_drop(const struct privs_user *user)
{
	int rc;

	/* jansson draws its hash seed from /dev/urandom at its first object: now, while the
	 * file may still be opened. */
	json_object_seed(0);
	rc = privs_drop(user, 0);
#ifdef TUNBED_SECCOMP
	/* Any call not allowed kills the process: a gateway stopped is better than one run by
	 * code that went astray. */
	if (rc == 0)
		rc = privs_seccomp_load(allowed, sizeof(allowed) / sizeof(allowed[0]), add_rules);
#endif
	if (rc == 0)
		log_info("privileges dropped: %s%s, no capability, NoNewPrivs%s",
			 user->set ? "user " : "uid 0", user->set ? user->name : "",
			 priv_seccomp() ? ", seccomp allow-list" : "");
	return rc;
}

bool priv_seccomp(void)
{
#ifdef TUNBED_SECCOMP
	return true;
#else
	return false;
#endif
}

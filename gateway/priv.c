/*
 * gregw's privileges after setup (see priv.h). Capabilities go with capget/capset and prctl;
 * the allow-list is built with libseccomp. After setup the workers move packets on
 * descriptors they hold (TUN queues, raw, packet and UDP sockets, rings) and the main thread
 * answers on its own (signalfd, timerfd, the control socket): none of it needs a capability.
 * The TUN device, and its routes with it, go when the last queue is closed: no capability
 * either.
 */
#include "priv.h"

#include <errno.h>
#include <jansson.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef TUNBED_SECCOMP
#include <fcntl.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#endif

#include "log.h"

enum { PRIV_CAP_MAX = 64 }; /* capability numbers there can be: capset's two 32-bit words */

static int fail(const char *what)
{
	int err = errno;

	log_warn("cannot drop privileges: %s", what);
	return -err;
}

static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return fail("capget");
	/* The bounding set limits what an exec could gain; dropping from it takes CAP_SETPCAP.
	 * Without it it stays, and NoNewPrivs stops the gain. */
	if (data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) {
		/* PR_CAPBSET_READ fails past the kernel's last capability. */
		for (int c = 0; c < PRIV_CAP_MAX && prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
				return fail("PR_CAPBSET_DROP");
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return fail("PR_CAP_AMBIENT_CLEAR_ALL");
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return fail("capset");
	return 0;
}

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

static int add_rules(scmp_filter_ctx ctx)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* Memory for malloc and thread stacks, never executable. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				      SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* Files only to read (/proc/PID/task/TID/stat): gregw is still uid 0, the owner of
	 * most of the system's files, so it may neither write nor create one. */
	if (rc == 0)
		rc = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
			SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY));
	/* isatty on stdout (stdio, before its first interval line). */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_EQ, TCGETS));
	return rc;
}

/* Any call not allowed kills the process: a gateway stopped is better than one run by code
 * that went astray. */
static int load_allow_list(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc;

	if (!ctx) {
		log_warnx("cannot drop privileges: seccomp_init failed");
		return -ENOMEM;
	}
	rc = add_rules(ctx);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0)
		log_warnx("cannot drop privileges: seccomp: %s", strerror(-rc));
	return rc;
}
#endif

int priv_drop(void)
{
	int rc;

	/* jansson draws its hash seed from /dev/urandom at its first object: now, while the
	 * file may still be opened. */
	json_object_seed(0);
	rc = drop_caps();
	if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		rc = fail("PR_SET_NO_NEW_PRIVS");
#ifdef TUNBED_SECCOMP
	if (rc == 0)
		rc = load_allow_list();
#endif
	if (rc == 0)
		log_info("privileges dropped: no capability, NoNewPrivs%s",
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

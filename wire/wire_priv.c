/*
 * Privileges after setup (see wire_priv.h). Capabilities are dropped with capget/capset and
 * prctl, the allow-list is built with libseccomp. Once the capture is open, frames are read
 * from descriptors tunbed-wire already holds: it needs no capability, no new file, no exec.
 */
#include "wire_priv.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef TUNBED_SECCOMP
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/if_packet.h>
#endif

#include "limits.h"
#include "log.h"

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
	/*
	 * The bounding set limits what an exec could gain; dropping from it takes CAP_SETPCAP.
	 * Without it (a user with file capabilities) it stays, and NoNewPrivs stops the gain.
	 */
	if (data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) {
		/* PR_CAPBSET_READ fails past the kernel's last capability. */
		for (int c = 0; c < WIRE_CAP_MAX && prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
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
 * The system calls tunbed-wire makes once its capture is open (strace of live and file runs,
 * and libpcap's pcap-linux.c for its error paths), each allowed without conditions.
 */
static const int allowed[] = {
	/* Frames: a file or the live ring's socket; the stop signal's signalfd; --write. */
	SCMP_SYS(read),
	SCMP_SYS(write),
	SCMP_SYS(lseek),
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	/* libpcap: the socket's error and counts (SO_ERROR, PACKET_STATISTICS), and whether
	 * the interface is still there after ENETDOWN (getsockname). */
	SCMP_SYS(getsockopt),
	SCMP_SYS(getsockname),
	/* Memory: malloc and free (mmap itself below). */
	SCMP_SYS(brk),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	/* stdio asks what a stream is before its first write; qsort, how much memory there is. */
	SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
	SCMP_SYS(sysinfo),
	/* Clocks, where the vDSO does not answer. */
	SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday),
	/* The end: the capture, the files, the process. */
	SCMP_SYS(close),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
};

static int add_rules(scmp_filter_ctx ctx)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* Memory for malloc, never executable. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				      SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* isatty on stdout (stdio), and libpcap's look at the interface's flags after ENETDOWN. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_EQ, TCGETS));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_EQ, SIOCGIFFLAGS));
	/* pcap_close takes the ring down with an empty PACKET_RX_RING. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 2,
				      SCMP_A1(SCMP_CMP_EQ, SOL_PACKET),
				      SCMP_A2(SCMP_CMP_EQ, PACKET_RX_RING));
	return rc;
}

/* Any call not allowed kills the process: a report cut short is better than one obtained
 * by code that went astray. */
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

int wire_priv_drop(void)
{
	int rc = drop_caps();

	if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		rc = fail("PR_SET_NO_NEW_PRIVS");
#ifdef TUNBED_SECCOMP
	if (rc == 0)
		rc = load_allow_list();
#endif
	if (rc == 0)
		log_debug("privileges dropped: no capability, NoNewPrivs%s",
			  wire_priv_seccomp() ? ", seccomp allow-list" : "");
	return rc;
}

bool wire_priv_seccomp(void)
{
#ifdef TUNBED_SECCOMP
	return true;
#else
	return false;
#endif
}

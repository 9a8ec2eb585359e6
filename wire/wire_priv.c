/*
 * Privileges after setup (see wire_priv.h): common/privs.c gives them up; this file holds
 * tunbed-wire's own seccomp allow-list. Once the capture is open, frames are read
 * from descriptors tunbed-wire already holds: it needs no capability, no new file, no exec.
 */
#include "wire_priv.h"

#ifdef TUNBED_SECCOMP
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_packet.h>
#endif

#include "log.h"
#include "privs.h"

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

static int add_rules(void *ctx)
{
	int rc;

	/* isatty on stdout (stdio), and libpcap's look at the interface's flags after ENETDOWN. */
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

#endif

int wire_priv_drop(const struct privs_user *user)
{
	int rc = privs_drop(user, 0);

#ifdef TUNBED_SECCOMP
	/* Any call not allowed kills the process: a report cut short is better than one
	 * obtained by code that went astray. */
	if (rc == 0)
		rc = privs_seccomp_load(allowed, sizeof(allowed) / sizeof(allowed[0]), add_rules);
#endif
	if (rc == 0)
		log_debug("privileges dropped: %s%s, no capability, NoNewPrivs%s",
			  user->set ? "user " : "uid 0", user->set ? user->name : "",
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

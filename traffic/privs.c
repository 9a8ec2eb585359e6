/*
 * Giving up privileges (see privs.h), with capget/capset and prctl: no library needed.
 */
#include "privs.h"

#include <errno.h>
#include <stdio.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

static int fail(const char *what)
{
	int err = errno;

	log_warn("cannot drop privileges: %s", what);
	return -err;
}

unsigned privs_for_congestion(const char *name)
{
	char list[512] = "", *tok, *save = NULL;
	FILE *f;

	if (!name || !name[0])
		return 0;
	f = fopen("/proc/sys/net/ipv4/tcp_allowed_congestion_control", "r");
	if (!f)
		return 0; /* unknown: the socket option will say */
	if (!fgets(list, sizeof(list), f))
		list[0] = 0;
	fclose(f);
	for (tok = strtok_r(list, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
		if (strcmp(tok, name) == 0)
			return 0;
	return 1u << CAP_NET_ADMIN;
}

int privs_drop(unsigned keep)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return fail("capget");
	/*
	 * The bounding set limits what an exec could gain; dropping from it takes CAP_SETPCAP.
	 * Without it (a user with file capabilities) it stays, and NoNewPrivs stops the gain.
	 * PR_CAPBSET_READ fails past the kernel's last capability.
	 */
	if (data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) {
		for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++) {
			if (c < 32 && (keep & (1u << c)))
				continue;
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
				return fail("PR_CAPBSET_DROP");
		}
	}
	/* What is kept must be held now: a capability not in the permitted set cannot be kept. */
	keep &= data[0].permitted;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return fail("PR_CAP_AMBIENT_CLEAR_ALL");
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = keep;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return fail("capset");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail("PR_SET_NO_NEW_PRIVS");
	log_debug("privileges dropped: %s, NoNewPrivs",
		  keep ? "all but CAP_NET_ADMIN for --congestion" : "no capability");
	return 0;
}

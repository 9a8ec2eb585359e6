/*
 * Giving up privileges (see privs.h): getpwnam_r for the user, setgroups/setresgid/setresuid,
 * capget/capset and prctl for the capabilities, libseccomp for the allow-list.
 */
#include "privs.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <pwd.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

enum {
	PRIVS_CAP_MAX = 64,  /* capability numbers there can be: capset's two 32-bit words */
	PRIVS_PWBUF = 16384, /* getpwnam_r's strings: glibc's own first guess is 1024 */
};

static int fail(const char *what)
{
	int err = errno;

	log_warn("cannot drop privileges: %s", what);
	return -err;
}

/* A uid written as a number: digits only, below the (uid_t)-1 that means "unchanged". */
static bool parse_uid(const char *s, uid_t *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v >= UINT_MAX)
		return false;
	*out = (uid_t)v;
	return true;
}

int privs_user_lookup(const char *name, struct privs_user *out)
{
	struct passwd pw, *found = NULL;
	uid_t uid;
	char *buf;
	int rc;

	memset(out, 0, sizeof(*out));
	if (strlen(name) >= sizeof(out->name))
		return -ENAMETOOLONG;
	buf = malloc(PRIVS_PWBUF);
	if (!buf)
		return -ENOMEM;
	rc = getpwnam_r(name, &pw, buf, PRIVS_PWBUF, &found);
	if (!rc && !found && parse_uid(name, &uid)) {
		/* A number is a uid, as chown takes one; without an entry its group is the
		 * same number. */
		rc = getpwuid_r(uid, &pw, buf, PRIVS_PWBUF, &found);
		out->uid = uid;
		out->gid = found ? found->pw_gid : (gid_t)uid;
		out->set = !rc;
	} else if (!rc && found) {
		out->uid = found->pw_uid;
		out->gid = found->pw_gid;
		out->set = true;
	}
	free(buf);
	if (rc)
		return -rc;
	if (!out->set)
		return -ENOENT;
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}

static int become(const struct privs_user *u, bool keep_caps)
{
	uid_t r, e, s;

	/* Without it, the change of uid empties the permitted set: nothing could be kept. */
	if (keep_caps && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return fail("PR_SET_KEEPCAPS");
	if (setgroups(0, NULL) < 0)
		return fail("setgroups");
	if (setresgid(u->gid, u->gid, u->gid) < 0)
		return fail("setresgid");
	if (setresuid(u->uid, u->uid, u->uid) < 0)
		return fail("setresuid");
	/* A change that did not take would leave root behind a success. */
	if (getresuid(&r, &e, &s) < 0 || r != u->uid || e != u->uid || s != u->uid) {
		errno = EPERM;
		return fail("setresuid did not take");
	}
	return 0;
}

int privs_drop(const struct privs_user *user, uint64_t keep)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	uint64_t held;
	int rc;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return fail("capget");
	held = (uint64_t)data[1].permitted << 32 | data[0].permitted;
	/* What is kept must be held now: a capability not permitted cannot be kept. */
	keep &= held;
	/*
	 * The bounding set limits what an exec could gain; dropping from it takes CAP_SETPCAP.
	 * Without it (a user with file capabilities) it stays, and NoNewPrivs stops the gain.
	 * PR_CAPBSET_READ fails past the kernel's last capability.
	 */
	if (data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) {
		for (int c = 0; c < PRIVS_CAP_MAX && prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++) {
			if (keep & (1ull << c))
				continue;
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
				return fail("PR_CAPBSET_DROP");
		}
	}
	if (user && user->set) {
		rc = become(user, keep != 0);
		if (rc)
			return rc;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return fail("PR_CAP_AMBIENT_CLEAR_ALL");
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (uint32_t)keep;
	data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return fail("capset");
	if (keep && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return fail("PR_SET_KEEPCAPS");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail("PR_SET_NO_NEW_PRIVS");
	return 0;
}

int privs_seccomp_load(const int *allowed, size_t n, int (*add_rules)(void *ctx))
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc = 0;

	if (!ctx) {
		log_warnx("cannot drop privileges: seccomp_init failed");
		return -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				      SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (rc == 0)
		rc = add_rules(ctx);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0)
		log_warnx("cannot drop privileges: seccomp: %s", strerror(-rc));
	return rc;
}

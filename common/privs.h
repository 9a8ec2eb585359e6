/*
 * Giving up privileges once a program is set up: another user (setresuid and setresgid, no
 * supplementary groups), every capability but those asked for (effective, permitted,
 * inheritable, ambient, and the bounding set when CAP_SETPCAP allows it), NoNewPrivs, and a
 * seccomp allow-list a part describes (libseccomp). gregw, tunbed-wire and tunbed-traffic
 * use it; what each keeps is in its docs ("Privileges") and docs/security.md.
 */
#ifndef TUNBED_PRIVS_H
#define TUNBED_PRIVS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum { PRIVS_NAME_MAX = 64 }; /* a user name: useradd allows 32 bytes */

/* A user to become (--user): set, its name, uid and primary group. */
struct privs_user {
	bool set;
	uid_t uid;
	gid_t gid;
	char name[PRIVS_NAME_MAX];
};

/*
 * Looks up user name (a name in the password database, or a number) into *out. Returns 0,
 * -ENOENT when there is no such user, -ENAMETOOLONG for a name of PRIVS_NAME_MAX bytes or
 * more, or another -errno of the lookup. Main thread, before threads start.
 */
int privs_user_lookup(const char *name, struct privs_user *out);

/*
 * Becomes user (when user->set: groups, then gids, then uids, all three of each), keeps the
 * capabilities of keep (1ull << CAP_...; those the process does not hold are not gained)
 * and drops every other, then sets NoNewPrivs: for good, nothing can come back. A thread's
 * credentials are its own: call it from the main thread before any other thread starts
 * (they inherit the result). Returns 0, or -errno after logging one line ("cannot drop
 * privileges: ...").
 */
int privs_drop(const struct privs_user *user, uint64_t keep);

/*
 * Loads a seccomp allow-list: the n system calls of allowed (SCMP_SYS numbers) with any
 * arguments, mmap without PROT_EXEC (memory for malloc and thread stacks, never
 * executable), and what add_rules adds to ctx (a scmp_filter_ctx, with seccomp_rule_add;
 * it returns 0 or libseccomp's -errno), calls with conditions; any other system call kills
 * the process. Call after privs_drop (NoNewPrivs lets an unprivileged process load it), from
 * the main thread before others start. Returns 0, or -errno after logging one line.
 */
int privs_seccomp_load(const int *allowed, size_t n, int (*add_rules)(void *ctx));

#endif

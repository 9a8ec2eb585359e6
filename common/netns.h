/*
 * Network namespaces made the way iproute2 makes them: a namespace is kept alive by a bind
 * mount of its nsfs file on /run/netns/NAME, so `ip netns exec NAME ...` works on it.
 * Needs CAP_SYS_ADMIN. Functions that switch namespace affect only the calling thread.
 */
#ifndef TUNBED_NETNS_H
#define TUNBED_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NETNS_RUN_DIR "/run/netns"

enum {
	NETNS_NAME_MAX = 64, /* including the NUL; iproute2 allows more, we never need it */
};

/* True if name is 1..63 characters of [A-Za-z0-9_.-] and not "." or "..". */
bool netns_name_valid(const char *name);

/*
 * Creates namespace name with its loopback down, as `ip netns add` does. Returns 0,
 * -EINVAL (bad name), -EEXIST (already there) or another -errno (-EPERM without privilege).
 * The calling thread stays in its own namespace.
 */
int netns_add(const char *name);

/*
 * Removes the mount and the file of namespace name, as `ip netns del` does; the namespace
 * itself lives on while a process or socket holds it. Also clears a file left without a
 * mount by a crash. Returns 0, -ENOENT (nothing there) or another -errno.
 */
int netns_del(const char *name);

/* Opens the namespace file. Returns an O_CLOEXEC fd or -errno (-ENOENT if absent). */
int netns_open(const char *name);

bool netns_exists(const char *name);

/*
 * Moves the calling thread into the namespace nsfd. On success stores in *saved an fd of the
 * namespace it was in, for netns_return. Returns 0 or -errno.
 */
int netns_enter(int nsfd, int *saved);

/* Moves the calling thread back to saved and closes it. Returns 0 or -errno. */
int netns_return(int saved);

/*
 * Calls fn for each namespace name in /run/netns, in no particular order, until fn returns
 * non-zero (which is then returned). Returns 0 if /run/netns is absent, or -errno.
 */
int netns_foreach(int (*fn)(const char *name, void *arg), void *arg);

/*
 * Fills pids[0..max) with the processes whose network namespace is name and returns how
 * many there are (which may exceed max), or -errno.
 */
int netns_pids(const char *name, pid_t *pids, int max);

/*
 * Finds the name under /run/netns of the calling thread's namespace, as `ip netns identify`
 * does. Returns 0 with the name in buf, -ENOENT if it has none (the initial namespace, or
 * one made without a name), or another -errno.
 */
int netns_identify(char *buf, size_t size);

#endif

/*
 * What gregw keeps of its privileges once it is set up (docs/gregw.md, "Privileges"): the
 * user of --user (else uid 0), no capability, NoNewPrivs, and, in builds without sanitizers
 * (TUNBED_SECCOMP), a seccomp allow-list of the system calls the workers, the main loop and
 * the exit make.
 */
#ifndef TUNBED_GW_PRIV_H
#define TUNBED_GW_PRIV_H

#include <stdbool.h>

#include "privs.h"

/*
 * Becomes user when it is set (--user), drops every capability (effective, permitted,
 * inheritable, ambient, and the bounding set), sets NoNewPrivs and, with TUNBED_SECCOMP,
 * loads the allow-list: any other system call kills the process. Main thread, once every device, route, socket, ring and file is set up and
 * before the workers start (they inherit all of it); jansson's hash seed is drawn here. Returns
 * 0, or -errno after logging one line.
 */
int priv_drop(const struct privs_user *user);

/* Whether priv_drop loads the seccomp allow-list in this build. */
bool priv_seccomp(void);

#endif

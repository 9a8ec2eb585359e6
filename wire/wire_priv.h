/*
 * What tunbed-wire keeps of its privileges once its capture is open (docs/wire.md,
 * "Privileges"): the user of --user (else uid 0), no capability, NoNewPrivs, and, in builds
 * without sanitizers (TUNBED_SECCOMP), a seccomp allow-list of the system calls that reading
 * frames, the report and the exit make.
 */
#ifndef TUNBED_WIRE_PRIV_H
#define TUNBED_WIRE_PRIV_H

#include <stdbool.h>

#include "privs.h"

/*
 * Becomes user when it is set (--user), drops every capability (effective, permitted,
 * inheritable and ambient, and the bounding set when CAP_SETPCAP is there to drop it), sets
 * NoNewPrivs and, with TUNBED_SECCOMP, loads the allow-list: any other system call kills the
 * process. Call once, from the only thread, after every file and socket the run needs is open
 * and jansson's hash seed is drawn (json_object_seed). Returns 0, or -errno after logging one
 * line.
 */
int wire_priv_drop(const struct privs_user *user);

/* Whether wire_priv_drop loads the seccomp allow-list in this build. */
bool wire_priv_seccomp(void);

#endif

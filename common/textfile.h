/*
 * A small text file read whole into memory for a parser: a regular file only (a FIFO cannot
 * hold the open, a device such as /dev/zero never ends), at most a limit of bytes.
 */
#ifndef TUNBED_TEXTFILE_H
#define TUNBED_TEXTFILE_H

#include <stddef.h>

/*
 * Reads path (at most max bytes) into *buf, a malloc'd copy of the file ended by a NUL that
 * *len does not count; the caller frees it. Returns 0, or -errno with why (size bytes) saying
 * what went wrong in a few words ("cannot open: No such file or directory", "not a regular
 * file", "file too large: at most N bytes", "changed while it was read"): -EINVAL for not a
 * regular file, -EFBIG for too large, -EAGAIN for a file that grew while it was read, -ENOMEM,
 * or the open's or the read's -errno. The buffer is the file's size, not max. Any thread.
 */
int textfile_read(const char *path, size_t max, char **buf, size_t *len, char *why, size_t size);

#endif

/*
 * Named network namespaces under /run/netns, compatible with iproute2 (see netns.h).
 */
#include "netns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd.h"

bool netns_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n >= NETNS_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
	       n;
}

static void ns_path(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", NETNS_RUN_DIR, name);
}

/*
 * iproute2 makes /run/netns a shared mount so that namespace mounts made later propagate into
 * mount namespaces created in between (ip netns exec makes one per command).
 */
static int prepare_run_dir(void)
{
	if (mkdir(NETNS_RUN_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	for (int tries = 0; tries < 2; tries++) {
		if (mount("", NETNS_RUN_DIR, "none", MS_SHARED | MS_REC, NULL) == 0)
			return 0;
		if (errno != EINVAL)
			return -errno;
		/* Not a mount point yet: bind it onto itself, then share it. */
		if (mount(NETNS_RUN_DIR, NETNS_RUN_DIR, "none", MS_BIND | MS_REC, NULL) < 0)
			return -errno;
	}
	return -EINVAL;
}

int netns_add(const char *name)
{
	char path[PATH_MAX];
	int fd, saved, rc;

	if (!netns_name_valid(name))
		return -EINVAL;
	rc = prepare_run_dir();
	if (rc)
		return rc;
	ns_path(name, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	close(fd);

	saved = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (saved < 0) {
		rc = -errno;
		goto err_unlink;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		rc = -errno;
		goto err_close;
	}
	if (mount("/proc/thread-self/ns/net", path, "none", MS_BIND, NULL) < 0)
		rc = -errno;
	/* Back home even if the mount failed: the new namespace then dies with no reference. */
	if (setns(saved, CLONE_NEWNET) < 0 && !rc)
		rc = -errno;
	close(saved);
	if (rc) {
		umount2(path, MNT_DETACH);
		unlink(path);
	}
	return rc;

err_close:
	close(saved);
err_unlink:
	unlink(path);
	return rc;
}

int netns_del(const char *name)
{
	char path[PATH_MAX];
	bool mounted;

	if (!netns_name_valid(name))
		return -EINVAL;
	ns_path(name, path, sizeof(path));
	mounted = umount2(path, MNT_DETACH) == 0;
	if (unlink(path) < 0) {
		if (errno == ENOENT && !mounted)
			return -ENOENT;
		if (errno != ENOENT)
			return -errno;
	}
	return 0;
}

int netns_open(const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (!netns_name_valid(name))
		return -EINVAL;
	ns_path(name, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

bool netns_exists(const char *name)
{
	int fd = netns_open(name);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int netns_enter(int nsfd, int *saved)
{
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return fd_close_err(fd);
	*saved = fd;
	return 0;
}

int netns_return(int saved)
{
	int rc = setns(saved, CLONE_NEWNET) < 0 ? -errno : 0;

	close(saved);
	return rc;
}

int netns_foreach(int (*fn)(const char *name, void *arg), void *arg)
{
	struct dirent *de;
	DIR *dir;
	int rc = 0;

	dir = opendir(NETNS_RUN_DIR);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		rc = fn(de->d_name, arg);
		if (rc)
			break;
	}
	closedir(dir);
	return rc;
}

int netns_pids(const char *name, pid_t *pids, int max)
{
	char path[PATH_MAX];
	struct stat want, st;
	struct dirent *de;
	DIR *proc;
	int n = 0;

	if (!netns_name_valid(name))
		return -EINVAL;
	ns_path(name, path, sizeof(path));
	if (stat(path, &want) < 0)
		return -errno;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while ((de = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		/* Processes come and go while we look: a vanished one is simply not counted. */
		if (stat(path, &st) < 0)
			continue;
		if (st.st_dev != want.st_dev || st.st_ino != want.st_ino)
			continue;
		if (n < max)
			pids[n] = (pid_t)pid;
		n++;
	}
	closedir(proc);
	return n;
}

struct identify {
	struct stat self;
	char *buf;
	size_t size;
};

static int match_self(const char *name, void *arg)
{
	struct identify *id = arg;
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, name);
	if (stat(path, &st) < 0 || st.st_dev != id->self.st_dev || st.st_ino != id->self.st_ino)
		return 0;
	snprintf(id->buf, id->size, "%s", name);
	return 1;
}

int netns_identify(char *buf, size_t size)
{
	struct identify id = { .buf = buf, .size = size };
	int rc;

	if (stat("/proc/thread-self/ns/net", &id.self) < 0)
		return -errno;
	rc = netns_foreach(match_self, &id);
	if (rc < 0)
		return rc;
	return rc == 1 ? 0 : -ENOENT;
}

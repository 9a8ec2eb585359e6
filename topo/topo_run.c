/*
 * topo up and down (see topo_run.h).
 */
#include "topo_run.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kernel.h"
#include "log.h"
#include "topo_model.h"

struct runner {
	const struct topo *t;
	const struct topo_up_opts *o;
	struct kernel_host hosts[TOPO_MAX_HOSTS];
	bool created[TOPO_MAX_HOSTS];
};

static int do_step(struct runner *r, const struct topo_step *s)
{
	const struct topo *t = r->t;
	const struct topo_link *l = s->link >= 0 ? &t->links[s->link] : NULL;
	const struct topo_end *end = l ? &l->end[s->end] : NULL;
	struct kernel_host *h = &r->hosts[s->host];
	char ns[NETNS_NAME_MAX];
	int rc;

	switch (s->kind) {
	case TOPO_STEP_NETNS:
		topo_netns_name(r->o->prefix, &t->hosts[s->host], ns);
		rc = netns_add(ns);
		if (rc)
			return rc;
		r->created[s->host] = true;
		return kernel_host_open(h, ns);
	case TOPO_STEP_LO_UP:
		return kernel_link_up(h, "lo");
	case TOPO_STEP_SYSCTL:
		return kernel_sysctl_set(h, s->name, s->value);
	case TOPO_STEP_VETH:
		return kernel_veth_add(h, l->end[0].ifname, &r->hosts[l->end[1].host],
				       l->end[1].ifname, l->mtu, l->queues);
	case TOPO_STEP_FEATURE:
		return kernel_feature_set(h, end->ifname,
					  s->feature == TOPO_FEATURE_GRO ? KERNEL_FEATURE_GRO
									 : KERNEL_FEATURE_TSO,
					  s->on);
	case TOPO_STEP_ADDR:
		return kernel_addr_add(h, end->ifname, &end->addrs[s->index]);
	case TOPO_STEP_LINK_UP:
		return kernel_link_up(h, end->ifname);
	case TOPO_STEP_QDISC: {
		uint32_t burst, limit;

		topo_link_tbf(l, &burst, &limit);
		return kernel_tbf_add(h, end->ifname, l->rate, burst, limit);
	}
	case TOPO_STEP_ROUTE: {
		const struct topo_route *rt = &t->routes[s->index];

		if (rt->local)
			return kernel_route_add_local(h, &rt->dst);
		return kernel_route_add(h, &rt->dst, rt->has_via ? &rt->via : NULL,
					rt->dev[0] ? rt->dev : NULL, rt->mtu);
	}
	}
	return -EINVAL;
}

/* Refuses (or with replace, removes) namespaces that already carry the names up will use. */
static int check_existing(struct runner *r, struct line_error *err)
{
	char ns[NETNS_NAME_MAX];
	int rc;

	for (int i = 0; i < r->t->nhosts; i++) {
		topo_netns_name(r->o->prefix, &r->t->hosts[i], ns);
		if (!netns_exists(ns))
			continue;
		if (!r->o->replace) {
			return line_error_set(
				err, -EEXIST, r->t->hosts[i].line,
				"namespace %s already exists: take it down first, or use --replace",
				ns);
		}
		rc = netns_del(ns);
		if (rc && rc != -ENOENT) {
			return line_error_set(err, rc, r->t->hosts[i].line,
					      "cannot remove namespace %s: %s", ns, strerror(-rc));
		}
	}
	return 0;
}

/* Removes what this run created; the first failure to do so is worth a warning, not more. */
static int undo(struct runner *r)
{
	char ns[NETNS_NAME_MAX];
	int n = 0;

	for (int i = 0; i < r->t->nhosts; i++) {
		kernel_host_close(&r->hosts[i]);
		if (!r->created[i])
			continue;
		topo_netns_name(r->o->prefix, &r->t->hosts[i], ns);
		if (netns_del(ns) == 0)
			n++;
		else
			log_warn("cannot remove namespace %s while undoing", ns);
	}
	return n;
}

int topo_up(const struct topo *t, const struct topo_plan *p, const struct topo_up_opts *o,
	    struct line_error *err)
{
	struct runner r = { .t = t, .o = o };
	char what[256];
	int rc = 0, i, removed;

	memset(err, 0, sizeof(*err));
	for (i = 0; i < TOPO_MAX_HOSTS; i++) {
		r.hosts[i].nsfd = -1;
		r.hosts[i].ioctl_fd = -1;
	}
	rc = check_existing(&r, err);
	if (rc)
		return rc;
	for (i = 0; i < p->nsteps; i++) {
		if (o->interrupted && *o->interrupted) {
			rc = -EINTR;
			break;
		}
		rc = (i + 1 == o->fail_at) ? -EIO : do_step(&r, &p->steps[i]);
		if (rc)
			break;
		if (log_level() >= LOG_LEVEL_DEBUG) {
			topo_step_describe(t, o->prefix, &p->steps[i], what, sizeof(what));
			log_debug("step %d: %s", i + 1, what);
		}
	}
	if (!rc) {
		for (i = 0; i < t->nhosts; i++)
			kernel_host_close(&r.hosts[i]);
		return 0;
	}
	removed = undo(&r);
	if (rc == -EINTR) {
		return line_error_set(err, rc, 0, "interrupted; undone (%d namespaces removed)",
				      removed);
	}
	topo_step_describe(t, o->prefix, &p->steps[i], what, sizeof(what));
	return line_error_set(err, rc, p->steps[i].line,
			      "step %d failed (%s): %s; undone (%d namespaces removed)", i + 1,
			      what, strerror(-rc), removed);
}

static int remove_one(const char *ns, struct topo_removed *out)
{
	pid_t pids[8];
	int n = netns_pids(ns, pids, 8), rc;

	if (n > 0)
		log_warnx("%s: %d process%s still inside (pid %d%s); the namespace lives on until "
			  "they exit",
			  ns, n, n == 1 ? "" : "es", (int)pids[0], n > 1 ? ", ..." : "");
	rc = netns_del(ns);
	if (rc)
		return rc;
	if (out && out->count < (int)(sizeof(out->names) / sizeof(out->names[0])))
		snprintf(out->names[out->count++], NETNS_NAME_MAX, "%s", ns);
	return 0;
}

/* Where gregw puts a namespace's control socket by default: NETNS.TUN.sock (docs/gregw.md). */
#define GREGW_CTL_DIR "/run/gregw"

/* A socket file at path that nobody answers: what a killed gregw left. */
static bool stale_socket(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || strlen(path) >= sizeof(sun.sun_path))
		return false;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : errno;
	close(fd);
	return rc == ECONNREFUSED;
}

/* Removes the stale control sockets of gregws that ran in namespaces named stem* from dir,
 * and (depth 1) from the directories in it, a --user's own (docs/gregw.md): a live one (its
 * gregw still inside, as down warns) stays. */
static void remove_ctl_sockets_in(const char *dir, const char *stem, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = strlen(stem);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[sizeof(GREGW_CTL_DIR) + 2 * 256];

		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (e->d_type == DT_DIR && depth > 0 && strcmp(e->d_name, ".") != 0 &&
		    strcmp(e->d_name, "..") != 0) {
			remove_ctl_sockets_in(path, stem, depth - 1);
			continue;
		}
		if (strncmp(e->d_name, stem, n) != 0 || len < 5 ||
		    strcmp(e->d_name + len - 5, ".sock") != 0)
			continue;
		if (stale_socket(path) && unlink(path) == 0)
			log_info("removed %s", path);
	}
	closedir(d);
}

static void remove_ctl_sockets(const char *stem)
{
	remove_ctl_sockets_in(GREGW_CTL_DIR, stem, 1);
}

int topo_down(const struct topo *t, const char *prefix, struct topo_removed *out)
{
	char ns[NETNS_NAME_MAX];
	int rc, first = 0;

	if (out)
		out->count = 0;
	for (int i = 0; i < t->nhosts; i++) {
		topo_netns_name(prefix, &t->hosts[i], ns);
		rc = remove_one(ns, out);
		{
			char stem[NETNS_NAME_MAX + 1];

			snprintf(stem, sizeof(stem), "%s.", ns);
			remove_ctl_sockets(stem);
		}
		if (rc == -ENOENT)
			continue;
		if (rc) {
			log_warnx("cannot remove namespace %s: %s", ns, strerror(-rc));
			if (!first)
				first = rc;
		}
	}
	return first;
}

struct prefix_walk {
	const char *prefix;
	size_t len;
	char names[TOPO_MAX_HOSTS * 8][NETNS_NAME_MAX];
	int count;
};

static int collect(const char *name, void *arg)
{
	struct prefix_walk *w = arg;

	/* Prefixes hold no '-', so "tb" never matches "tb2-x" and "tb2" never "tb-x". */
	if (strncmp(name, w->prefix, w->len) != 0 || name[w->len] != '-')
		return 0;
	if (w->count >= (int)(sizeof(w->names) / sizeof(w->names[0])))
		return -ENOSPC;
	snprintf(w->names[w->count++], NETNS_NAME_MAX, "%s", name);
	return 0;
}

int topo_down_prefix(const char *prefix, struct topo_removed *out)
{
	static struct prefix_walk w;
	int rc, first = 0;

	memset(&w, 0, sizeof(w));
	w.prefix = prefix;
	w.len = strlen(prefix);
	if (out)
		out->count = 0;
	/* Collect first: removing entries while readdir walks the directory may skip some. */
	rc = netns_foreach(collect, &w);
	if (rc && rc != -ENOSPC)
		return rc;
	for (int i = 0; i < w.count; i++) {
		int r = remove_one(w.names[i], out);

		if (r && r != -ENOENT) {
			log_warnx("cannot remove namespace %s: %s", w.names[i], strerror(-r));
			if (!first)
				first = r;
		}
	}
	/* More than fit in one pass: go again for the rest. */
	if (rc == -ENOSPC && !first)
		return topo_down_prefix(prefix, NULL);
	{
		char stem[NETNS_NAME_MAX + 1];

		snprintf(stem, sizeof(stem), "%s-", prefix);
		remove_ctl_sockets(stem);
	}
	return first;
}

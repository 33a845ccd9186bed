/* SPDX-License-Identifier: BSD-3-Clause
 * libibverbs functions outside the verbs objects that rdma-core's tools
 * import: ibv_read_sysfs_file (ibv_devinfo reads board_id with it) and
 * UD multicast attach/detach (mckey, perftest's ib_send_* -M).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "fork_srv.h"
#include "internal.h"

/* The ibdev_path droce gives its devices (device.c): "/droce/droceN". */
#define DROCE_IBDEV_DIR "/droce/"

/*
 * rdma-core 44 (libibverbs/sysfs.c): reads @dir/@file into @buf, drops a
 * trailing newline and NUL-terminates; the length read, or -1 (errno set).
 * droce devices have no sysfs directory: their paths answer from the
 * table below, anything else is read from the file system as rdma-core
 * does.
 */
int
ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	static const struct { const char *file, *value; } droce_files[] = {
		{ "board_id", "DROCE_SOFT_ROCE" },
		{ "node_type", "1: CA" },
	};
	char *path;
	ssize_t len;
	int fd;

	if (dir == NULL || file == NULL || buf == NULL || size == 0) {
		errno = EINVAL;
		return -1;
	}
	if (strncmp(dir, DROCE_IBDEV_DIR, strlen(DROCE_IBDEV_DIR)) == 0) {
		for (size_t i = 0; i < sizeof(droce_files) / sizeof(droce_files[0]); i++) {
			size_t n = strlen(droce_files[i].value);

			if (strcmp(file, droce_files[i].file) != 0)
				continue;
			if (n >= size) {
				errno = EINVAL;
				return -1;
			}
			memcpy(buf, droce_files[i].value, n + 1);
			return (int)n;
		}
		errno = ENOENT;
		return -1;
	}
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len > 0) {
		if (buf[len - 1] == '\n') {
			buf[--len] = '\0';
		} else if ((size_t)len < size) {
			buf[len] = '\0';
		} else {
			errno = EOVERFLOW; /* no room for the terminator */
			return -1;
		}
	}
	return (int)len;
}

/*
 * UD multicast (dataplane/mcast.c), with the kernel's answers (ib_attach_mcast
 * and uverbs): EINVAL for a QP that is not UD or a GID that is not a group;
 * attaching twice changes nothing and succeeds; detaching what is not
 * attached is EINVAL.  The LID is not used on RoCE (any value goes, as on
 * an Ethernet port of the kernel).
 */
int
ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (droce_fk_ctx(qp ? qp->context : NULL))
		return droce_fk_mcast(qp, gid, lid, true);
	struct droce_vqp *q = (struct droce_vqp *)qp;

	(void)lid;
	if (q == NULL || gid == NULL || q->type != DROCE_QPT_UD || q->dqp == NULL)
		return EINVAL;
	return droce_mcast_attach(q->dqp, gid->raw);
}

int
ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (droce_fk_ctx(qp ? qp->context : NULL))
		return droce_fk_mcast(qp, gid, lid, false);
	struct droce_vqp *q = (struct droce_vqp *)qp;
	int rc;

	(void)lid;
	if (q == NULL || gid == NULL || q->type != DROCE_QPT_UD || q->dqp == NULL)
		return EINVAL;
	rc = droce_mcast_detach(q->dqp, gid->raw);
	return rc == ENOENT ? EINVAL : rc;
}

/* Importing a context, PD or MR from another process shares a kernel
 * command fd; droce's objects live in the process that made them, so there
 * is nothing to import: what rdma-core answers for a provider without
 * import. */
struct ibv_context *
ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *
ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_pd(struct ibv_pd *pd)
{
	/* no PD is ever imported */
}

/* A forked child's attach / detach (fork_srv.c serves it; registered here so
 * that fork_srv.c does not pull the multicast code into what links it).
 * h: the QP, payload the group's GID, a[0] the LID. */
static void
fork_op_mcast(struct fk_client *c, struct fk_io *io)
{
	union ibv_gid gid;

	OBJ(o, FK_T_QP, io->m.h);
	if (io->plen != sizeof(gid)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&gid, io->pl, sizeof(gid));
	io->m.rc = io->m.op == DROCE_FK_ATTACH_MCAST ?
			   ibv_attach_mcast(o->p, &gid, (uint16_t)io->m.a[0]) :
			   ibv_detach_mcast(o->p, &gid, (uint16_t)io->m.a[0]);
}

__attribute__((constructor)) static void
fork_mcast_init(void)
{
	droce_fk_ops[DROCE_FK_ATTACH_MCAST] = fork_op_mcast;
	droce_fk_ops[DROCE_FK_DETACH_MCAST] = fork_op_mcast;
}

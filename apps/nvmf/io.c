/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf's NVM command set (Read, Write, Flush, Write Zeroes, Dataset
 * Management) and its two backends.
 *
 * Memory namespaces: the namespace memory is registered as an MR, so a keyed
 * Read is one RDMA WRITE straight from it and a keyed Write one RDMA READ
 * straight into it; in-capsule writes are one memcpy out of the RECV buffer.
 *
 * File namespaces: a pool of worker threads does pread/pwrite/fdatasync/
 * fallocate on the request's bounce buffer (registered once per request
 * slot), so a slow file stalls neither the engine loop nor other queues.  A
 * worker pool rather than io_uring: no new dependency, and the same code
 * serves regular files and block devices (O_DIRECT is not required).  Jobs
 * go through a mutex and condition variable; the loop takes finished ones
 * back only when an atomic count says there are some.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

#define MAX_WORKERS 16

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct nvmf_req *todo_head, *todo_tail, *done;
	atomic_uint n_done;
	bool stop;
	unsigned int n;
	pthread_t th[MAX_WORKERS];
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

struct nvmf_ns *
nvmf_ns_find(struct nvmf_subsys *s, uint32_t nsid)
{
	for (unsigned int i = 0; i < s->n_ns; i++)
		if (s->ns[i].nsid == nsid)
			return &s->ns[i];
	return NULL;
}

static uint32_t
ns_lkey(struct nvmf_ns *ns, struct nvmf_dev *d)
{
	if (ns->mr[d->idx] == NULL)
		ns->mr[d->idx] = ibv_reg_mr(d->pd, ns->mem, ns->size, IBV_ACCESS_LOCAL_WRITE);
	return ns->mr[d->idx] ? ns->mr[d->idx]->lkey : 0;
}

static uint16_t
range_ok(const struct nvmf_ns *ns, uint64_t slba, uint64_t nlb)
{
	uint64_t blocks = ns->size >> ns->lba_shift;

	return slba < blocks && nlb <= blocks - slba ? 0 : NVMF_SC_LBA_RANGE | NVMF_DNR;
}

int
nvmf_prep_io(struct nvmf_req *r)
{
	const struct nvmf_sqe *c = &r->sqe;
	struct nvmf_ns *ns;
	uint64_t slba = (uint64_t)c->cdw11 << 32 | c->cdw10, nlb = (c->cdw12 & 0xffff) + 1ull;
	uint16_t st;

	if (!nvmf_ctrl_ready(r->q->ctrl))
		return NVMF_SC_CMD_SEQ_ERROR | NVMF_DNR;
	if (c->opcode == NVMF_IO_FLUSH && c->nsid == 0xffffffffu && r->len == 0)
		return 0; /* every namespace */
	switch (c->opcode) {
	case NVMF_IO_READ:
	case NVMF_IO_WRITE:
	case NVMF_IO_FLUSH:
	case NVMF_IO_WRITE_ZEROES:
	case NVMF_IO_DSM:
		break;
	default:
		return NVMF_SC_INVALID_OPCODE | NVMF_DNR;
	}
	ns = nvmf_ns_find(r->q->ctrl->subsys, c->nsid);
	if (ns == NULL)
		return NVMF_SC_INVALID_NS | NVMF_DNR;
	r->ns = ns;
	switch (c->opcode) {
	case NVMF_IO_READ:
	case NVMF_IO_WRITE:
		st = range_ok(ns, slba, nlb);
		if (st)
			return st;
		if (r->len != nlb << ns->lba_shift)
			return NVMF_SC_SGL_INVALID_DATA | NVMF_DNR;
		r->off = (off_t)(slba << ns->lba_shift);
		if (r->in_capsule)
			return 0;
		if (ns->kind == NVMF_NS_MEM) {
			r->data = ns->mem + r->off;
			r->lkey = ns_lkey(ns, r->q->dev);
			return r->lkey ? 0 : NVMF_SC_INTERNAL | NVMF_DNR;
		}
		return nvmf_req_bounce(r) ? NVMF_SC_INTERNAL | NVMF_DNR : 0;
	case NVMF_IO_WRITE_ZEROES:
		st = range_ok(ns, slba, nlb);
		if (st)
			return st;
		r->off = (off_t)(slba << ns->lba_shift);
		return r->len ? NVMF_SC_SGL_INVALID_DATA | NVMF_DNR : 0;
	case NVMF_IO_DSM:
		if (r->len < ((c->cdw10 & 0xff) + 1u) * sizeof(struct nvmf_dsm_range) || r->len > 4096)
			return NVMF_SC_SGL_INVALID_DATA | NVMF_DNR;
		return nvmf_req_bounce(r) ? NVMF_SC_INTERNAL | NVMF_DNR : 0;
	default: /* flush */
		return r->len ? NVMF_SC_SGL_INVALID_DATA | NVMF_DNR : 0;
	}
}

/* The worker side of one file job; sets r->err. */
static void
file_job(struct nvmf_req *r)
{
	struct nvmf_ns *ns = r->ns;
	size_t done = 0;
	ssize_t n;

	r->err = 0;
	switch (r->sqe.opcode) {
	case NVMF_IO_READ:
		while (done < r->len) {
			n = pread(ns->fd, r->data + done, r->len - done, r->off + (off_t)done);
			if (n <= 0) {
				if (n == 0) /* past the file's end: zeros */
					memset(r->data + done, 0, r->len - done);
				else if (errno != EINTR)
					r->err = errno;
				if (n == 0 || errno != EINTR)
					break;
				continue;
			}
			done += (size_t)n;
		}
		break;
	case NVMF_IO_WRITE:
		while (done < r->len) {
			n = pwrite(ns->fd, r->data + done, r->len - done, r->off + (off_t)done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				r->err = n < 0 ? errno : EIO;
				break;
			}
			done += (size_t)n;
		}
		if (r->err == 0 && (r->sqe.cdw12 & (1u << 30))) /* FUA */
			r->err = fdatasync(ns->fd) ? errno : 0;
		break;
	case NVMF_IO_FLUSH:
		r->err = fdatasync(ns->fd) ? errno : 0;
		break;
	case NVMF_IO_WRITE_ZEROES: {
		uint64_t nlb = (r->sqe.cdw12 & 0xffff) + 1ull;

		if (fallocate(ns->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, r->off,
			      (off_t)(nlb << ns->lba_shift)) != 0)
			r->err = errno;
		break;
	}
	case NVMF_IO_DSM: {
		const struct nvmf_dsm_range *rg = (const void *)r->data;
		unsigned int nr = (r->sqe.cdw10 & 0xff) + 1;

		for (unsigned int i = 0; i < nr && r->err == 0; i++)
			if (fallocate(ns->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)(rg[i].slba << ns->lba_shift),
				      (off_t)((uint64_t)rg[i].nlb << ns->lba_shift)) != 0 &&
			    errno != EOPNOTSUPP)
				r->err = errno;
		break;
	}
	default:
		r->err = EINVAL;
	}
}

static void *
worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct nvmf_req *r;

		while (pool.todo_head == NULL && !pool.stop)
			pthread_cond_wait(&pool.cond, &pool.lock);
		if (pool.todo_head == NULL)
			break;
		r = pool.todo_head;
		pool.todo_head = r->next;
		if (pool.todo_head == NULL)
			pool.todo_tail = NULL;
		pthread_mutex_unlock(&pool.lock);
		file_job(r);
		pthread_mutex_lock(&pool.lock);
		r->next = pool.done;
		pool.done = r;
		atomic_fetch_add_explicit(&pool.n_done, 1, memory_order_release);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

int
nvmf_backend_start(unsigned int workers)
{
	if (workers > MAX_WORKERS)
		workers = MAX_WORKERS;
	for (pool.n = 0; pool.n < workers; pool.n++)
		if (pthread_create(&pool.th[pool.n], NULL, worker, NULL) != 0)
			return -1;
	return 0;
}

void
nvmf_backend_stop(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.stop = true;
	pthread_cond_broadcast(&pool.cond);
	pthread_mutex_unlock(&pool.lock);
	for (unsigned int i = 0; i < pool.n; i++)
		pthread_join(pool.th[i], NULL);
	pool.n = 0;
}

static uint16_t
status_of_errno(int err)
{
	switch (err) {
	case 0: return 0;
	case ENOSPC: return NVMF_SC_CAP_EXCEEDED | NVMF_DNR;
	case EIO: return NVMF_SC_DATA_XFER_ERROR;
	default: return NVMF_SC_INTERNAL | NVMF_DNR;
	}
}

void
nvmf_backend_poll(void)
{
	struct nvmf_req *list;

	if (atomic_load_explicit(&pool.n_done, memory_order_acquire) == 0)
		return;
	pthread_mutex_lock(&pool.lock);
	list = pool.done;
	pool.done = NULL;
	atomic_store_explicit(&pool.n_done, 0, memory_order_relaxed);
	pthread_mutex_unlock(&pool.lock);
	while (list) {
		struct nvmf_req *r = list;

		list = r->next;
		nvmf_req_complete(r, status_of_errno(r->err));
	}
}

static void
file_submit(struct nvmf_req *r)
{
	r->state = NVMF_REQ_EXECUTING;
	r->next = NULL;
	pthread_mutex_lock(&pool.lock);
	if (pool.todo_tail)
		pool.todo_tail->next = r;
	else
		pool.todo_head = r;
	pool.todo_tail = r;
	pthread_cond_signal(&pool.cond);
	pthread_mutex_unlock(&pool.lock);
}

static uint16_t
mem_dsm(struct nvmf_req *r)
{
	const struct nvmf_dsm_range *rg = (const void *)r->data;
	unsigned int nr = (r->sqe.cdw10 & 0xff) + 1;
	struct nvmf_ns *ns = r->ns;

	for (unsigned int i = 0; i < nr; i++)
		if (range_ok(ns, rg[i].slba, rg[i].nlb))
			return NVMF_SC_LBA_RANGE | NVMF_DNR;
	if (!(r->sqe.cdw11 & (1u << 2)))
		return 0; /* attributes only: advisory */
	for (unsigned int i = 0; i < nr; i++) /* deallocated blocks read as zeros */
		memset(ns->mem + (rg[i].slba << ns->lba_shift), 0, (size_t)rg[i].nlb << ns->lba_shift);
	return 0;
}

void
nvmf_exec_io(struct nvmf_req *r)
{
	struct nvmf_ctrl *c = r->q->ctrl;
	struct nvmf_ns *ns = r->ns;
	uint16_t st = 0;

	if (ns == NULL) { /* flush of every namespace */
		for (unsigned int i = 0; i < c->subsys->n_ns; i++)
			if (c->subsys->ns[i].kind == NVMF_NS_FILE && fdatasync(c->subsys->ns[i].fd) != 0)
				st = NVMF_SC_INTERNAL | NVMF_DNR;
		r->status = st;
		r->state = NVMF_REQ_EXECUTED;
		return;
	}
	if (r->sqe.opcode == NVMF_IO_READ) {
		c->host_reads++;
		c->units_read += r->len >> 9;
	} else if (r->sqe.opcode == NVMF_IO_WRITE) {
		c->host_writes++;
		c->units_written += r->len >> 9;
	}
	if (r->sqe.opcode == NVMF_IO_DSM) {
		const struct nvmf_dsm_range *rg = (const void *)r->data;

		for (unsigned int i = 0; i <= (r->sqe.cdw10 & 0xff); i++)
			if (range_ok(ns, rg[i].slba, rg[i].nlb)) {
				r->status = NVMF_SC_LBA_RANGE | NVMF_DNR;
				r->state = NVMF_REQ_EXECUTED;
				return;
			}
		if (ns->kind == NVMF_NS_FILE && !(r->sqe.cdw11 & (1u << 2))) {
			r->state = NVMF_REQ_EXECUTED;
			return;
		}
	}
	if (ns->kind == NVMF_NS_FILE)
		return file_submit(r);
	switch (r->sqe.opcode) {
	case NVMF_IO_WRITE:
		if (r->in_capsule)
			memcpy(ns->mem + r->off, r->data, r->len);
		break;
	case NVMF_IO_WRITE_ZEROES:
		memset(ns->mem + r->off, 0, (size_t)(((r->sqe.cdw12 & 0xffff) + 1ull) << ns->lba_shift));
		break;
	case NVMF_IO_DSM:
		st = mem_dsm(r);
		break;
	default: /* read: the data is the namespace memory; flush: nothing cached */
		break;
	}
	r->status = st;
	r->state = NVMF_REQ_EXECUTED;
}

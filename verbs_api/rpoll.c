/* SPDX-License-Identifier: BSD-3-Clause
 * rpoll: librdmacm's poll() over rsockets and ordinary file descriptors.
 * droce has no rsockets (rsocket() and the rest are not exported), so every
 * descriptor is an ordinary one, and librdmacm polls those with poll().
 * rdma-core's rping, udaddy and ucmatose import rpoll (their shared
 * common.c), and are linked with BIND_NOW, so it must exist.
 */
#include <poll.h>

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout);

int
rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

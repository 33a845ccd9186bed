/* SPDX-License-Identifier: BSD-3-Clause
 * rdma_cm API without connections, over the embedded loopback config
 * (droce0 198.18.0.1 <-> droce1 198.18.0.2 on a ring pair): rdma_getaddrinfo,
 * event channels (poll, epoll, O_NONBLOCK), ids, binding (ephemeral ports,
 * EADDRINUSE, EADDRNOTAVAIL), address and route resolution (ARP, shared
 * device contexts, path records), rdma_get_devices, QPs that rdma_create_qp
 * moves to INIT (RC) or RTS (UD), rdma_init_qp_attr, options, multicast
 * joins and leaves, and the errnos of bad input.  Each Criterion test is its own process with its own
 * EAL.  Over 800 lines because the API's calls are checked one by one
 * against the kernel's errnos, each case a few lines over one shared set-up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "common.h"
#include "dataplane/dp.h"

TestSuite(rdmacm_api, .fini = rcm_fini, .timeout = 30);

Test(rdmacm_api, getaddrinfo_numeric_passive_and_active)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in *sin;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	cr_assert_eq(rdma_getaddrinfo(RCM_ADDR1, "7471", &hints, &res), 0);
	cr_assert(res->ai_flags & RAI_PASSIVE);
	cr_assert_eq(res->ai_family, AF_INET);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_assert_eq(res->ai_port_space, RDMA_PS_TCP);
	cr_assert_not_null(res->ai_src_addr);
	cr_assert_null(res->ai_dst_addr);
	sin = (struct sockaddr_in *)res->ai_src_addr;
	cr_assert_eq(ntohs(sin->sin_port), 7471);
	cr_assert_eq(sin->sin_addr.s_addr, inet_addr(RCM_ADDR1));
	rdma_freeaddrinfo(res);

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
	hints.ai_family = AF_INET;
	cr_assert_eq(rdma_getaddrinfo(RCM_ADDR0, "9", &hints, &res), 0);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_UD);
	cr_assert_eq(res->ai_port_space, RDMA_PS_UDP);
	cr_assert_not_null(res->ai_dst_addr);
	cr_assert_eq(res->ai_dst_len, sizeof(struct sockaddr_in));
	rdma_freeaddrinfo(res);

	/* IPv6 numeric, passive wildcard */
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_family = AF_INET6;
	cr_assert_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	cr_assert_eq(res->ai_family, AF_INET6);
	cr_assert(IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)res->ai_src_addr)->sin6_addr));
	rdma_freeaddrinfo(res);
}

Test(rdmacm_api, getaddrinfo_bad_input)
{
	struct rdma_addrinfo hints, *res;

	errno = 0;
	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	cr_assert_eq(errno, EINVAL);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	/* not numeric: getaddrinfo's EAI_NONAME, as librdmacm returns it */
	cr_assert_eq(rdma_getaddrinfo("not-an-address", "1", &hints, &res), EAI_NONAME);
	hints.ai_family = AF_IB;
	errno = 0;
	cr_assert_eq(rdma_getaddrinfo(RCM_ADDR0, "1", &hints, &res), -1);
	cr_assert_eq(errno, EAFNOSUPPORT);
}

Test(rdmacm_api, event_str_names_every_event)
{
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED), "RDMA_CM_EVENT_ADDR_RESOLVED");
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_CONNECT_REQUEST),
			 "RDMA_CM_EVENT_CONNECT_REQUEST");
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_REJECTED), "RDMA_CM_EVENT_REJECTED");
	cr_assert_str_eq(rdma_event_str(999), "UNKNOWN EVENT");
	for (int e = RDMA_CM_EVENT_ADDR_RESOLVED; e <= RDMA_CM_EVENT_TIMEWAIT_EXIT; e++)
		cr_assert_str_neq(rdma_event_str(e), "UNKNOWN EVENT", "event %d", e);
}

struct blocked_reader {
	struct rdma_event_channel *ch;
	atomic_int returned;
	int rc, err;
};

static void *
blocked_reader_main(void *arg)
{
	struct blocked_reader *b = arg;
	struct rdma_cm_event *ev;

	b->rc = rdma_get_cm_event(b->ch, &ev);
	b->err = errno;
	atomic_store(&b->returned, 1);
	return NULL;
}

/*
 * rping's CM thread blocks in rdma_get_cm_event() while main destroys the
 * channel and returns; with librdmacm that thread never wakes.  droce woke
 * it with -1/ENODATA and rping exited 255 after a clean run.
 */
Test(rdmacm_api, destroying_a_channel_does_not_wake_a_blocked_reader)
{
	struct blocked_reader b = { .ch = rdma_create_event_channel() };
	pthread_t t;

	cr_assert_not_null(b.ch);
	cr_assert_eq(pthread_create(&t, NULL, blocked_reader_main, &b), 0);
	usleep(100 * 1000); /* let it block in the read */
	rdma_destroy_event_channel(b.ch);
	usleep(300 * 1000);
	cr_assert_eq(atomic_load(&b.returned), 0,
		     "rdma_get_cm_event returned %d (%s) after the channel was destroyed", b.rc,
		     strerror(b.err));
	/* read() is a cancellation point: end the thread the test made */
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

/*
 * The other side of rping 44's race: its CM thread calls rdma_get_cm_event()
 * again just after main destroyed the channel.  librdmacm reads a closed fd
 * (EBADF); droce answers the same and writes nothing into the channel's
 * memory, which it keeps for a while (chan_retire) instead of freeing.
 */
Test(rdmacm_api, get_event_on_a_destroyed_channel_is_ebadf)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev = NULL;

	cr_assert_not_null(ch);
	rdma_destroy_event_channel(ch);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EBADF, "errno %d (%s)", errno, strerror(errno));
	cr_assert_null(ev);
}

Test(rdmacm_api, create_id_errors)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	cr_assert_not_null(ch);
	errno = 0;
	cr_assert_eq(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x4242), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(id->qp_type, IBV_QPT_UD);
	cr_assert_eq(id->channel, ch);
	cr_assert_eq(rdma_destroy_id(id), 0);
	errno = 0;
	cr_assert_eq(rdma_ack_cm_event(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_api, bind_ephemeral_inuse_notavail)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b, *c, *u;
	struct sockaddr_in s;
	struct sockaddr_in6 s6;
	uint16_t p;

	cr_assert_eq(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &u, NULL, RDMA_PS_UDP), 0);

	/* port 0: an ephemeral port; a specific address binds the device */
	s = rcm_sin(RCM_ADDR0, 0);
	cr_assert_eq(rdma_bind_addr(a, (struct sockaddr *)&s), 0);
	p = ntohs(rdma_get_src_port(a));
	cr_assert(p >= 32768 && p <= 60999, "ephemeral port %u", p);
	cr_assert_not_null(a->verbs);
	cr_assert_str_eq(ibv_get_device_name(a->verbs->device), "droce0");
	cr_assert_eq(((struct sockaddr_in *)rdma_get_local_addr(a))->sin_addr.s_addr,
		     inet_addr(RCM_ADDR0));
	/* bound twice */
	errno = 0;
	cr_assert_eq(rdma_bind_addr(a, (struct sockaddr *)&s), -1);
	cr_assert_eq(errno, EINVAL);

	/* the same port on the wildcard: in use */
	s = rcm_sin("0.0.0.0", p);
	errno = 0;
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&s), -1);
	cr_assert_eq(errno, EADDRINUSE);
	/* the same port in the other port space: free */
	cr_assert_eq(rdma_bind_addr(u, (struct sockaddr *)&s), 0);
	/* the same port on the other device's address: free */
	s = rcm_sin(RCM_ADDR1, p);
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&s), 0);
	cr_assert_str_eq(ibv_get_device_name(b->verbs->device), "droce1");

	/* an address no droce port has */
	s = rcm_sin("198.18.0.77", 5000);
	errno = 0;
	cr_assert_eq(rdma_bind_addr(c, (struct sockaddr *)&s), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL);
	/* a loopback address binds as the wildcard does (the kernel's
	 * cma_any_addr): no device, the address kept, and the port it takes
	 * overlaps every address's (libfabric binds "localhost") */
	{
		struct rdma_cm_id *lo, *lo6, *other;

		cr_assert_eq(rdma_create_id(ch, &lo, NULL, RDMA_PS_TCP), 0);
		cr_assert_eq(rdma_create_id(ch, &lo6, NULL, RDMA_PS_TCP), 0);
		cr_assert_eq(rdma_create_id(ch, &other, NULL, RDMA_PS_TCP), 0);
		s = rcm_sin("127.0.0.1", 5002);
		cr_assert_eq(rdma_bind_addr(lo, (struct sockaddr *)&s), 0, "%s", strerror(errno));
		cr_assert_null(lo->verbs, "on no device");
		cr_assert_eq(((struct sockaddr_in *)rdma_get_local_addr(lo))->sin_addr.s_addr,
			     inet_addr("127.0.0.1"));
		s = rcm_sin(RCM_ADDR0, 5002);
		errno = 0;
		cr_assert_eq(rdma_bind_addr(other, (struct sockaddr *)&s), -1);
		cr_assert_eq(errno, EADDRINUSE, "a loopback binding takes the port everywhere");
		memset(&s6, 0, sizeof(s6));
		s6.sin6_family = AF_INET6;
		s6.sin6_addr = in6addr_loopback;
		s6.sin6_port = htons(5003);
		cr_assert_eq(rdma_bind_addr(lo6, (struct sockaddr *)&s6), 0, "%s", strerror(errno));
		cr_assert_null(lo6->verbs);
		rdma_destroy_id(lo);
		rdma_destroy_id(lo6);
		rdma_destroy_id(other);
	}
	/* a family rdma_cm does not bind */
	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_UNIX;
	errno = 0;
	cr_assert_eq(rdma_bind_addr(c, (struct sockaddr *)&s6), -1);
	cr_assert_eq(errno, EAFNOSUPPORT);
	/* the IPv6 wildcard: no device yet */
	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(5001);
	cr_assert_eq(rdma_bind_addr(c, (struct sockaddr *)&s6), 0);
	cr_assert_null(c->verbs);
	cr_assert_eq(ntohs(rdma_get_src_port(c)), 5001);

	/* destroying frees the port */
	cr_assert_eq(rdma_destroy_id(a), 0);
	cr_assert_eq(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), 0);
	s = rcm_sin(RCM_ADDR0, p);
	cr_assert_eq(rdma_bind_addr(a, (struct sockaddr *)&s), 0);

	rdma_destroy_id(a);
	rdma_destroy_id(b);
	rdma_destroy_id(c);
	rdma_destroy_id(u);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_api, channel_fd_nonblock_poll_epoll)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = rcm_sin(RCM_ADDR1, 7000);
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct epoll_event ee = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0);

	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ee), 0);
	cr_assert_eq(epoll_wait(ep, &out, 1, 0), 0);

	cr_assert_eq(rdma_create_id(ch, &id, (void *)0x1234, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	/* the event arrives: the fd polls readable (bounded wait) */
	cr_assert_eq(poll(&pfd, 1, 5000), 1);
	cr_assert(pfd.revents & POLLIN);
	cr_assert_eq(epoll_wait(ep, &out, 1, 5000), 1);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(ev->status, 0);
	cr_assert_eq(ev->id, id);
	cr_assert_eq(ev->id->context, (void *)0x1234);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	/* drained: not readable, EAGAIN again */
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	close(ep);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_api, resolve_addr_and_route_share_the_device)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = rcm_sin(RCM_ADDR1, 7000);
	struct ibv_context **devs;
	union ibv_gid g0, g1;
	int n = 0;

	cr_assert_eq(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP), 0);
	/* route before address: EINVAL */
	errno = 0;
	cr_assert_eq(rdma_resolve_route(a, 1000), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_resolve_addr(a, NULL, (struct sockaddr *)&dst, 2000), 0);
	rcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
	cr_assert_eq(rdma_resolve_addr(b, NULL, (struct sockaddr *)&dst, 2000), 0);
	rcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
	/* 198.18.0.2 is reached from droce0 (its peer on the pair) */
	cr_assert_not_null(a->verbs);
	cr_assert_str_eq(ibv_get_device_name(a->verbs->device), "droce0");
	cr_assert_eq(a->verbs, b->verbs, "one context per device, shared");
	cr_assert_eq(a->pd, b->pd);
	cr_assert_eq(a->port_num, 1);
	cr_assert_eq(((struct sockaddr_in *)rdma_get_local_addr(a))->sin_addr.s_addr,
		     inet_addr(RCM_ADDR0));
	cr_assert_eq(((struct sockaddr_in *)rdma_get_peer_addr(a))->sin_addr.s_addr,
		     inet_addr(RCM_ADDR1));
	cr_assert_eq(ntohs(rdma_get_dst_port(a)), 7000);
	cr_assert_neq(rdma_get_src_port(a), rdma_get_src_port(b));
	/* the devices list holds the same contexts */
	devs = rdma_get_devices(&n);
	cr_assert_not_null(devs);
	cr_assert_eq(n, 2);
	cr_assert_eq(devs[0], a->verbs);
	cr_assert_null(devs[2]);
	rdma_free_devices(devs);

	cr_assert_eq(rdma_resolve_route(a, 2000), 0);
	ev = rcm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, true);
	cr_assert_eq(ev->status, 0);
	rdma_ack_cm_event(ev);
	cr_assert_eq(a->route.num_paths, 1);
	cr_assert_not_null(a->route.path_rec);
	cr_assert_eq(ibv_query_gid(a->verbs, 1, 0, &g0), 0);
	cr_assert_arr_eq(a->route.path_rec->sgid.raw, g0.raw, 16);
	cr_assert_arr_eq(a->route.addr.addr.ibaddr.sgid.raw, g0.raw, 16);
	memset(&g1, 0, sizeof(g1));
	g1.raw[10] = g1.raw[11] = 0xff;
	memcpy(&g1.raw[12], &dst.sin_addr, 4);
	cr_assert_arr_eq(a->route.path_rec->dgid.raw, g1.raw, 16, "RoCE GID ::ffff:198.18.0.2");
	cr_assert_eq(a->route.path_rec->pkey, htons(0xffff));
	cr_assert_eq(a->route.path_rec->mtu, IBV_MTU_1024); /* IP MTU 1500 */
	rdma_destroy_id(a);
	rdma_destroy_id(b);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_api, resolve_addr_errors)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	cr_assert_eq(rdma_resolve_addr(id, NULL, NULL, 100), -1);
	cr_assert_eq(errno, EINVAL);
	/* no droce port on that subnet */
	dst = rcm_sin("198.19.7.7", 1);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 200), 0);
	ev = rcm_expect(ch, RDMA_CM_EVENT_ADDR_ERROR, 5000, true);
	cr_assert_eq(ev->status, -ENETUNREACH);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);

	/* on the subnet, but nobody answers ARP */
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	dst = rcm_sin("198.18.0.77", 1);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 300), 0);
	ev = rcm_expect(ch, RDMA_CM_EVENT_ADDR_ERROR, 5000, true);
	cr_assert_eq(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_api, sync_id_errors_return_minus_one)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = rcm_sin("198.18.0.77", 1);

	/* a synchronous id reports the error event as -1 / errno */
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_not_null(id->channel);
	errno = 0;
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 300), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_not_null(id->event);
	cr_assert_eq(id->event->event, RDMA_CM_EVENT_ADDR_ERROR);
	/* the kept event is acked by rdma_destroy_id */
	cr_assert_eq(rdma_destroy_id(id), 0);
}

static void
resolved_id(struct rdma_cm_id **id, enum rdma_port_space ps)
{
	struct sockaddr_in dst = rcm_sin(RCM_ADDR1, 7000);

	cr_assert_eq(rdma_create_id(NULL, id, NULL, ps), 0);
	cr_assert_eq(rdma_resolve_addr(*id, NULL, (struct sockaddr *)&dst, 2000), 0);
	cr_assert_eq(rdma_resolve_route(*id, 2000), 0);
}

Test(rdmacm_api, create_qp_moves_rc_to_init_and_ud_to_rts)
{
	struct rdma_cm_id *rc, *ud;
	struct ibv_qp_init_attr ia, got;
	struct ibv_qp_attr qa;
	int mask;

	resolved_id(&rc, RDMA_PS_TCP);
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	cr_assert_eq(rdma_create_qp(rc, NULL, &ia), 0);
	cr_assert_not_null(rc->qp);
	/* CQs and channels made for the id, with the id as cq_context
	 * (rdma_get_send_comp asserts it) */
	cr_assert_not_null(rc->send_cq);
	cr_assert_not_null(rc->recv_cq);
	cr_assert_neq(rc->send_cq, rc->recv_cq);
	cr_assert_eq(rc->send_cq->cq_context, rc);
	cr_assert_not_null(rc->send_cq_channel);
	cr_assert_eq(rc->qp->pd, rc->pd);
	cr_assert_eq(ibv_query_qp(rc->qp, &qa, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &got), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_INIT);
	cr_assert_eq(qa.qp_access_flags, 0);
	/* a second QP: EINVAL */
	errno = 0;
	cr_assert_eq(rdma_create_qp(rc, NULL, &ia), -1);
	cr_assert_eq(errno, EINVAL);
	/* rdma_init_qp_attr: INIT always; RTR needs the peer (no REP yet) */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	cr_assert_eq(rdma_init_qp_attr(rc, &qa, &mask), 0);
	cr_assert_eq(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	cr_assert_eq(qa.port_num, 1);
	qa.qp_state = IBV_QPS_RTR;
	errno = 0;
	cr_assert_eq(rdma_init_qp_attr(rc, &qa, &mask), -1);
	cr_assert_eq(errno, EINVAL);
	qa.qp_state = IBV_QPS_SQD;
	errno = 0;
	cr_assert_eq(rdma_init_qp_attr(rc, &qa, &mask), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_qp(rc);
	cr_assert_null(rc->qp);
	cr_assert_null(rc->send_cq);
	rdma_destroy_id(rc);

	resolved_id(&ud, RDMA_PS_UDP);
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_UD;
	cr_assert_eq(rdma_create_qp(ud, NULL, &ia), 0, "%s", strerror(errno));
	cr_assert_eq(ibv_query_qp(ud->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &got), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS, "a UD QP can send at once");
	cr_assert_eq(qa.qkey, RDMA_UDP_QKEY);
	rdma_destroy_qp(ud);
	rdma_destroy_id(ud);
}

Test(rdmacm_api, wrong_state_and_bad_params)
{
	struct rdma_cm_id *id, *lid;
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr ia;
	struct sockaddr_in s = rcm_sin(RCM_ADDR1, 7400);
	char big[200];

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	memset(&cp, 0, sizeof(cp));
	/* connect before the route */
	errno = 0;
	cr_assert_eq(rdma_connect(id, &cp), -1);
	cr_assert_eq(errno, EINVAL);
	/* accept / reject / disconnect / establish on an id with no request */
	errno = 0;
	cr_assert_eq(rdma_accept(id, &cp), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_reject(id, NULL, 0), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_disconnect(id), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_establish(id), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_id(id);

	resolved_id(&id, RDMA_PS_TCP);
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	cr_assert_eq(rdma_create_qp(id, NULL, &ia), 0);
	/* more responder resources than the device has */
	cp.responder_resources = 200;
	errno = 0;
	cr_assert_eq(rdma_connect(id, &cp), -1);
	cr_assert_eq(errno, EINVAL);
	/* private data beyond 56 bytes (92 minus the 36-byte rdma_cm header) */
	cp.responder_resources = 1;
	memset(big, 7, sizeof(big));
	cp.private_data = big;
	cp.private_data_len = 57;
	errno = 0;
	cr_assert_eq(rdma_connect(id, &cp), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);

	/* rdma_get_request needs a synchronous listener */
	{
		struct rdma_event_channel *ch = rdma_create_event_channel();
		struct rdma_cm_id *got;

		cr_assert_eq(rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP), 0);
		cr_assert_eq(rdma_bind_addr(lid, (struct sockaddr *)&s), 0);
		cr_assert_eq(rdma_listen(lid, 4), 0);
		errno = 0;
		cr_assert_eq(rdma_get_request(lid, &got), -1);
		cr_assert_eq(errno, EINVAL);
		/* a second listener on the same address and port */
		cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
		errno = 0;
		cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&s), -1);
		cr_assert_eq(errno, EADDRINUSE);
		rdma_destroy_id(id);
		rdma_destroy_id(lid);
		rdma_destroy_event_channel(ch);
	}
}

/* ECE values as librdmacm keeps them (rdma_set_local_ece /
 * rdma_get_remote_ece): argument checks, and a peer that sent none reads 0. */
Test(rdmacm_api, ece_local_and_remote)
{
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr ia;
	struct ibv_ece ece = { .vendor_id = 0x1234, .options = 7 }, got;

	resolved_id(&id, RDMA_PS_TCP);
	errno = 0;
	cr_assert_eq(rdma_set_local_ece(id, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_set_local_ece(id, &(struct ibv_ece){ .vendor_id = 0 }), -1);
	cr_assert_eq(errno, EINVAL, "a zero vendor_id");
	errno = 0;
	cr_assert_eq(rdma_set_local_ece(id, &(struct ibv_ece){ .vendor_id = 1, .comp_mask = 1 }), -1);
	cr_assert_eq(errno, EINVAL, "a comp_mask");
	cr_assert_eq(rdma_set_local_ece(id, &ece), 0);
	memset(&got, 0xa5, sizeof(got));
	cr_assert_eq(rdma_get_remote_ece(id, &got), 0);
	cr_assert_eq(got.vendor_id, 0, "no peer has sent ECE");
	cr_assert_eq(got.options, 0);
	cr_assert_eq(got.comp_mask, 0);
	errno = 0;
	cr_assert_eq(rdma_get_remote_ece(id, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	/* with a QP: both EINVAL (librdmacm takes ECE from the QP then) */
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	cr_assert_eq(rdma_create_qp(id, NULL, &ia), 0, "%s", strerror(errno));
	errno = 0;
	cr_assert_eq(rdma_set_local_ece(id, &ece), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_get_remote_ece(id, &got), -1);
	cr_assert_eq(errno, EINVAL);
	/* the QP's own ECE: not supported, as on a device without it */
	cr_assert_eq(ibv_query_ece(id->qp, &got), EOPNOTSUPP);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	errno = 0;
	cr_assert_eq(rdma_set_local_ece(NULL, &ece), -1);
	cr_assert_eq(errno, EINVAL);
}

Test(rdmacm_api, set_option_and_migrate)
{
	struct rdma_event_channel *ch1 = rdma_create_event_channel();
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = rcm_sin(RCM_ADDR1, 7000);
	uint8_t tos = 0x20, to = 16;
	int one = 1;

	cr_assert_eq(rdma_create_id(ch1, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1), 0);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &to, 1), 0);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				     sizeof(one)), 0);
	errno = 0;
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_set_option(id, 77, 0, &tos, 1), -1);
	cr_assert_eq(errno, ENOSYS);
	errno = 0;
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_ID, 99, &tos, 1), -1);
	cr_assert_eq(errno, ENOSYS);

	/* an event queued on ch1 moves with the id to ch2 */
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	cr_assert_eq(rdma_migrate_id(id, ch2), 0);
	cr_assert_eq(id->channel, ch2);
	fcntl(ch1->fd, F_SETFL, O_NONBLOCK);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch1, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	rcm_expect(ch2, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
	/* REUSEADDR after binding: EINVAL */
	errno = 0;
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				     sizeof(one)), -1);
	cr_assert_eq(errno, EINVAL);
	/* the route carries the TOS and the ACK timeout */
	cr_assert_eq(rdma_resolve_route(id, 2000), 0);
	rcm_expect(ch2, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, false);
	cr_assert_eq(id->route.path_rec->traffic_class, 0x20);
	/* to a synchronous channel and back is refused only from sync to sync */
	cr_assert_eq(rdma_migrate_id(id, NULL), 0);
	errno = 0;
	cr_assert_eq(rdma_migrate_id(id, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
}

Test(rdmacm_api, srq_on_an_id_feeds_its_qp)
{
	struct rdma_cm_id *id;
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;

	resolved_id(&id, RDMA_PS_TCP);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	cr_assert_eq(rdma_create_srq(id, NULL, &sa), 0, "%s", strerror(errno));
	cr_assert_not_null(id->srq);
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	/* librdmacm sizes the receive CQ it makes from max_recv_wr, SRQ or not */
	ia.cap.max_recv_wr = 16;
	ia.qp_type = IBV_QPT_RC;
	cr_assert_eq(rdma_create_qp(id, NULL, &ia), 0, "%s", strerror(errno));
	cr_assert_eq(id->qp->srq, id->srq, "rdma_create_qp takes the id's SRQ");
	/* rdma_destroy_ep frees QP, SRQ and id */
	rdma_destroy_ep(id);
}

/* A UDP id bound to @ip (synchronous), with a UD QP (RTS, RDMA_UDP_QKEY) and
 * 8 receives of 256 + 40 bytes posted from @buf. */
static struct rdma_cm_id *
mc_id(const char *ip, struct ibv_mr **mr, uint8_t *buf)
{
	struct sockaddr_in a = rcm_sin(ip, 0);
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr ia;

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_UD;
	cr_assert_eq(rdma_create_qp(id, NULL, &ia), 0, "%s", strerror(errno));
	*mr = rdma_reg_msgs(id, buf, 8 * 296);
	cr_assert_not_null(*mr);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(rdma_post_recv(id, NULL, buf + i * 296, 296, *mr), 0);
	return id;
}

/* rdma_join_multicast(_ex) / rdma_leave_multicast: the errors of malformed
 * joins, the MULTICAST_JOIN event's ud parameters (as the kernel's cma for
 * RoCE: the group's AH, QPN 0xFFFFFF, RDMA_UDP_QKEY, the join's context),
 * the QP attached when the event is taken (a datagram from the other port
 * arrives), a send-only join that attaches nothing, and the leave. */
Test(rdmacm_api, join_multicast)
{
	static uint8_t rbuf[8 * 296], sbuf[8 * 296];
	struct sockaddr_in grp = rcm_sin("239.5.6.7", 0), uni = rcm_sin(RCM_ADDR1, 0);
	struct sockaddr_in any = rcm_sin("0.0.0.0", 0);
	struct rdma_cm_join_mc_attr_ex ex = { 0 };
	struct rdma_cm_id *r, *s, *tcp, *unbound;
	struct ibv_mr *rmr, *smr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	uint32_t qpn, qkey;
	uint8_t mgid[16];
	int ctx_tag;

	r = mc_id(RCM_ADDR1, &rmr, rbuf);
	s = mc_id(RCM_ADDR0, &smr, sbuf);
	/* malformed joins */
	errno = 0;
	cr_assert_eq(rdma_join_multicast(r, (struct sockaddr *)&uni, NULL), -1);
	cr_assert_eq(errno, EINVAL, "a unicast address");
	cr_assert_eq(rdma_create_id(NULL, &unbound, NULL, RDMA_PS_UDP), 0);
	errno = 0;
	cr_assert_eq(rdma_join_multicast(unbound, (struct sockaddr *)&grp, NULL), -1);
	cr_assert_eq(errno, EINVAL, "an id bound to no device");
	cr_assert_eq(rdma_bind_addr(unbound, (struct sockaddr *)&any), 0);
	errno = 0;
	cr_assert_eq(rdma_join_multicast(unbound, (struct sockaddr *)&grp, NULL), -1);
	cr_assert_eq(errno, EINVAL, "a wildcard binding: no device");
	rdma_destroy_id(unbound);
	cr_assert_eq(rdma_create_id(NULL, &tcp, NULL, RDMA_PS_TCP), 0);
	{
		struct sockaddr_in a = rcm_sin(RCM_ADDR1, 0);

		cr_assert_eq(rdma_bind_addr(tcp, (struct sockaddr *)&a), 0);
	}
	errno = 0;
	cr_assert_eq(rdma_join_multicast(tcp, (struct sockaddr *)&grp, NULL), -1);
	cr_assert_eq(errno, EINVAL, "RDMA_PS_TCP: no UD QP");
	rdma_destroy_id(tcp);
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	errno = 0;
	cr_assert_eq(rdma_join_multicast_ex(r, &ex, NULL), -1);
	cr_assert_eq(errno, ENOTSUP);
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	ex.addr = (struct sockaddr *)&grp;
	errno = 0;
	cr_assert_eq(rdma_join_multicast_ex(r, &ex, NULL), -1);
	cr_assert_eq(errno, EINVAL, "no join flags");
	ex.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ex.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	errno = 0;
	cr_assert_eq(rdma_join_multicast_ex(r, &ex, NULL), -1);
	cr_assert_eq(errno, EINVAL, "a reserved join flag");
	errno = 0;
	cr_assert_eq(rdma_leave_multicast(r, (struct sockaddr *)&grp), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL, "not joined");

	/* the receiver joins: the event, and its QP attached */
	cr_assert_eq(rdma_join_multicast(r, (struct sockaddr *)&grp, &ctx_tag), 0);
	cr_assert_eq(r->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	cr_assert_eq(r->event->status, 0);
	cr_assert_eq(r->event->param.ud.private_data, &ctx_tag);
	cr_assert_eq(r->event->param.ud.qp_num, 0xffffff);
	cr_assert_eq(r->event->param.ud.qkey, RDMA_UDP_QKEY);
	cr_assert(r->event->param.ud.ah_attr.is_global);
	cr_assert_eq(r->event->param.ud.ah_attr.grh.hop_limit, 64);
	cr_assert_eq(r->event->param.ud.ah_attr.grh.dgid.raw[10], 0xff);
	cr_assert_eq(memcmp(r->event->param.ud.ah_attr.grh.dgid.raw + 12, &grp.sin_addr, 4), 0);
	cr_assert_eq(droce_mcast_group_members(1, r->event->param.ud.ah_attr.grh.dgid.raw), 1);
	errno = 0;
	cr_assert_eq(rdma_join_multicast(r, (struct sockaddr *)&grp, NULL), -1);
	cr_assert_eq(errno, EADDRINUSE, "the same group twice");

	/* the sender joins send-only: its QP is not attached */
	ex.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	cr_assert_eq(rdma_join_multicast_ex(s, &ex, NULL), 0);
	cr_assert_eq(s->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	cr_assert_eq(droce_mcast_group_members(1, s->event->param.ud.ah_attr.grh.dgid.raw), 1);
	cr_assert_eq(droce_mcast_group_members(0, s->event->param.ud.ah_attr.grh.dgid.raw), 0);
	ah = ibv_create_ah(s->pd, &s->event->param.ud.ah_attr);
	cr_assert_not_null(ah, "ibv_create_ah from the JOIN event: %s", strerror(errno));
	qpn = s->event->param.ud.qp_num;
	qkey = s->event->param.ud.qkey;
	memcpy(sbuf, "group datagram", 15);
	cr_assert_eq(rdma_post_ud_send(s, NULL, sbuf, 15, smr, IBV_SEND_SIGNALED, ah, qpn), 0);
	cr_assert_eq(qkey, RDMA_UDP_QKEY); /* rdma_post_ud_send sends with RDMA_UDP_QKEY */
	wc = tc_wait(s->send_cq, 2000, "group send");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	wc = tc_wait(r->recv_cq, 2000, "group receive");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 15 + 40);
	cr_assert_str_eq((const char *)rbuf + 40, "group datagram");
	cr_assert_eq(wc.src_qp, s->qp->qp_num);

	/* leave: detached, the group gone from the port */
	memcpy(mgid, r->event->param.ud.ah_attr.grh.dgid.raw, 16);
	cr_assert_eq(rdma_leave_multicast(r, (struct sockaddr *)&grp), 0);
	cr_assert_eq(droce_mcast_group_members(1, mgid), 0);
	cr_assert_eq(rdma_leave_multicast(s, (struct sockaddr *)&grp), 0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	rdma_dereg_mr(rmr);
	rdma_dereg_mr(smr);
	rdma_destroy_qp(r);
	rdma_destroy_qp(s);
	rdma_destroy_id(r);
	rdma_destroy_id(s);
}

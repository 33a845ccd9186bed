/* SPDX-License-Identifier: BSD-3-Clause
 * A plain librdmacm server in the style of rdma-core's rdma_server example:
 * only <rdma/rdma_cma.h> and <rdma/rdma_verbs.h>, built with
 * `pkg-config --cflags --libs droce`.  It waits for one connection on
 * ADDR:PORT (default 198.18.0.1:7471; `[ADDR [PORT]]` or rdma_server's
 * `-s ADDR -p PORT`), receives a 16-byte message, answers it with the same
 * bytes reversed, and disconnects.  It plays rdma-core's rdma_server
 * protocol (one 16-byte send each way, then both sides disconnect), so
 * rdma-core's rdma_client (which sends 16 zero bytes and does not look at
 * the reply) runs against it.  Single-threaded; synchronous ids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define LEN 16

int
main(int argc, char **argv)
{
	const char *addr = "198.18.0.1", *port = "7471";
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_mr *rmr, *smr;
	uint8_t rbuf[LEN], sbuf[LEN];
	struct ibv_wc wc;
	int i, op;

	while ((op = getopt(argc, argv, "s:p:")) != -1) {
		if (op == 's') {
			addr = optarg;
		} else if (op == 'p') {
			port = optarg;
		} else {
			fprintf(stderr, "usage: %s [-s ADDR] [-p PORT] | [ADDR [PORT]]\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		addr = argv[optind++];
	if (optind < argc)
		port = argv[optind++];

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, port, &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(&listen_id, res, NULL, &attr)) {
		perror("rdma_create_ep");
		return 1;
	}
	rdma_freeaddrinfo(res);
	if (rdma_listen(listen_id, 0)) {
		perror("rdma_listen");
		return 1;
	}
	/* scripts/rxe/matrix.py waits for this line before starting a client */
	printf("rdma_server: listening on %s port %s\n", addr, port);
	fflush(stdout);
	if (rdma_get_request(listen_id, &id)) {
		perror("rdma_get_request");
		return 1;
	}
	rmr = rdma_reg_msgs(id, rbuf, LEN);
	smr = rdma_reg_msgs(id, sbuf, LEN);
	if (!rmr || !smr || rdma_post_recv(id, NULL, rbuf, LEN, rmr)) {
		perror("rdma_reg_msgs / rdma_post_recv");
		return 1;
	}
	if (rdma_accept(id, NULL)) {
		perror("rdma_accept");
		return 1;
	}
	if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != LEN) {
		fprintf(stderr, "receive failed\n");
		return 1;
	}
	for (i = 0; i < LEN; i++)
		sbuf[i] = rbuf[LEN - 1 - i];
	if (rdma_post_send(id, NULL, sbuf, LEN, smr, 0) || rdma_get_send_comp(id, &wc) != 1 ||
	    wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "send failed\n");
		return 1;
	}
	/* DREQ, or the DREP to the client's; returns on DISCONNECTED */
	if (rdma_disconnect(id)) {
		perror("rdma_disconnect");
		return 1;
	}
	rdma_dereg_mr(rmr);
	rdma_dereg_mr(smr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	printf("rdma_server: ok\n");
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * A plain librdmacm client in the style of rdma-core's rdma_client example:
 * only <rdma/rdma_cma.h> and <rdma/rdma_verbs.h>, built with
 * `pkg-config --cflags --libs droce`.  It connects to ADDR:PORT (default
 * 198.18.0.1:7471; `[ADDR [PORT]]` or rdma_client's `-s ADDR -p PORT`),
 * sends 16 bytes inline, expects a 16-byte reply, and disconnects.
 * It plays rdma-core's rdma_client protocol (one 16-byte send each way, then
 * both sides disconnect), so it also runs against rdma-core's rdma_server:
 * the reply is the 16 bytes reversed from droce's example_rdma_server, or 16
 * zero bytes from rdma-core's rdma_server (which never fills its send buffer);
 * anything else fails.  Single-threaded; synchronous ids.
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
	struct rdma_cm_id *id;
	struct ibv_mr *rmr;
	uint8_t rbuf[LEN], sbuf[LEN];
	struct ibv_wc wc;
	int i, op, zeros = 1, reversed = 1;

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
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, port, &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = LEN;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(&id, res, NULL, &attr)) {
		perror("rdma_create_ep");
		return 1;
	}
	rdma_freeaddrinfo(res);
	rmr = rdma_reg_msgs(id, rbuf, LEN);
	if (!rmr || rdma_post_recv(id, NULL, rbuf, LEN, rmr)) {
		perror("rdma_reg_msgs / rdma_post_recv");
		return 1;
	}
	if (rdma_connect(id, NULL)) {
		perror("rdma_connect");
		return 1;
	}
	for (i = 0; i < LEN; i++)
		sbuf[i] = (uint8_t)('a' + i);
	if (rdma_post_send(id, NULL, sbuf, LEN, NULL, IBV_SEND_INLINE) ||
	    rdma_get_send_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "send failed\n");
		return 1;
	}
	if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != LEN) {
		fprintf(stderr, "receive failed\n");
		return 1;
	}
	for (i = 0; i < LEN; i++) {
		reversed &= rbuf[i] == sbuf[LEN - 1 - i];
		zeros &= rbuf[i] == 0;
	}
	if (!reversed && !zeros) {
		fprintf(stderr, "reply neither reversed nor zero:");
		for (i = 0; i < LEN; i++)
			fprintf(stderr, " %02x", rbuf[i]);
		fprintf(stderr, "\n");
		return 1;
	}
	printf("rdma_client: reply %s\n", reversed ? "reversed" : "zeros (rdma-core's rdma_server)");
	if (rdma_disconnect(id)) {
		perror("rdma_disconnect");
		return 1;
	}
	rdma_dereg_mr(rmr);
	rdma_destroy_ep(id);
	printf("rdma_client: ok\n");
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * A plain librdmacm client in the style of rdma-core's rdma_client example:
 * only <rdma/rdma_cma.h> and <rdma/rdma_verbs.h>, built with
 * `pkg-config --cflags --libs droce`.  It connects to ADDR:PORT (default
 * 198.18.0.1:7471), sends 16 bytes inline, expects them back reversed, and
 * disconnects.  Single-threaded; synchronous ids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define LEN 16

int
main(int argc, char **argv)
{
	const char *addr = argc > 1 ? argv[1] : "198.18.0.1";
	const char *port = argc > 2 ? argv[2] : "7471";
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_mr *rmr;
	uint8_t rbuf[LEN], sbuf[LEN];
	struct ibv_wc wc;
	int i;

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
		if (rbuf[i] != sbuf[LEN - 1 - i]) {
			fprintf(stderr, "byte %d: %02x\n", i, rbuf[i]);
			return 1;
		}
	}
	if (rdma_disconnect(id)) {
		perror("rdma_disconnect");
		return 1;
	}
	rdma_dereg_mr(rmr);
	rdma_destroy_ep(id);
	printf("rdma_client: ok\n");
	return 0;
}

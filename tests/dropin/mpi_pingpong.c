/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two-rank MPI ping-pong and bandwidth loop for the dropin suite's Open MPI
 * cell (issue 23 §1) and scripts/mpi-vs-tcp: plain MPI, nothing of droce,
 * so the same binary runs over UCX's rc_verbs on droce and over UCX's tcp.
 *
 * Every message's bytes are checked: message i of a phase carries
 * fill(i, j) = (i * 131 + j * 7 + size) & 0xff at byte j; the receiver
 * compares all of them and counts mismatches.  Rank 0 prints, per phase:
 *
 *   pingpong SIZE ITERS half-RTT-us
 *   bw SIZE WINDOW ITERS MB/s
 *   bad N            (bytes that differed, both ranks summed)
 *
 * Usage: mpi_pingpong [-l LAT_SIZE] [-n LAT_ITERS] [-s BW_SIZE] [-w WINDOW] [-m BW_ITERS]
 * Exit status: 0 when every byte matched, 1 otherwise (or MPI's error).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TAG_PING = 1, TAG_BW = 2, TAG_ACK = 3 };

static inline uint8_t fill(long i, long j, long size)
{
	return (uint8_t)((i * 131 + j * 7 + size) & 0xff);
}

static void pattern(uint8_t *b, long size, long i)
{
	for (long j = 0; j < size; j++)
		b[j] = fill(i, j, size);
}

static long check(const uint8_t *b, long size, long i)
{
	long bad = 0;

	for (long j = 0; j < size; j++)
		bad += b[j] != fill(i, j, size);
	return bad;
}

/* ping-pong: rank 0 sends message i, rank 1 checks it and sends it back
 * with pattern i + 1, rank 0 checks that */
static long pingpong(int rank, uint8_t *buf, long size, long iters, double *half_rtt_us)
{
	long bad = 0;
	double t0 = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	for (long i = -10; i < iters; i++) { /* 10 warm-up rounds */
		if (i == 0)
			t0 = MPI_Wtime();
		long k = i < 0 ? i + 1000 : i;
		if (rank == 0) {
			pattern(buf, size, 2 * k);
			MPI_Send(buf, (int)size, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			bad += check(buf, size, 2 * k + 1);
		} else {
			MPI_Recv(buf, (int)size, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			bad += check(buf, size, 2 * k);
			pattern(buf, size, 2 * k + 1);
			MPI_Send(buf, (int)size, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
		}
	}
	*half_rtt_us = (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)iters);
	return bad;
}

/* bandwidth: rank 0 posts WINDOW sends of distinct buffers, rank 1 WINDOW
 * receives, then a zero-byte ack; ITERS rounds */
static long bandwidth(int rank, uint8_t *bufs, long size, int window, long iters, double *mbs)
{
	MPI_Request *req = calloc((size_t)window, sizeof(*req));
	long bad = 0;
	double t0 = 0;

	if (!req)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Barrier(MPI_COMM_WORLD);
	for (long r = -2; r < iters; r++) { /* 2 warm-up rounds */
		if (r == 0)
			t0 = MPI_Wtime();
		long base = (r + 2) * window;
		for (int w = 0; w < window; w++) {
			uint8_t *b = bufs + (size_t)w * (size_t)size;
			if (rank == 0) {
				pattern(b, size, base + w);
				MPI_Isend(b, (int)size, MPI_BYTE, 1, TAG_BW, MPI_COMM_WORLD, &req[w]);
			} else {
				MPI_Irecv(b, (int)size, MPI_BYTE, 0, TAG_BW, MPI_COMM_WORLD, &req[w]);
			}
		}
		MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
		if (rank == 1) {
			for (int w = 0; w < window; w++)
				bad += check(bufs + (size_t)w * (size_t)size, size, base + w);
			MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
		} else {
			MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	}
	*mbs = (double)size * (double)window * (double)iters / ((MPI_Wtime() - t0) * 1e6);
	free(req);
	return bad;
}

int main(int argc, char **argv)
{
	long lat_size = 8, lat_iters = 2000, bw_size = 65536, bw_iters = 100;
	int window = 16, rank, nranks, opt;
	long bad, total = 0;
	double lat, mbs;
	uint8_t *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt(argc, argv, "l:n:s:w:m:")) != -1) {
		switch (opt) {
		case 'l': lat_size = atol(optarg); break;
		case 'n': lat_iters = atol(optarg); break;
		case 's': bw_size = atol(optarg); break;
		case 'w': window = atoi(optarg); break;
		case 'm': bw_iters = atol(optarg); break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: %s [-l LAT_SIZE] [-n LAT_ITERS] [-s BW_SIZE] [-w WINDOW] [-m BW_ITERS]\n", argv[0]);
			MPI_Finalize();
			return 2;
		}
	}
	if (nranks != 2 || lat_size < 1 || lat_iters < 1 || bw_size < 1 || window < 1 || bw_iters < 1) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks and sizes, counts >= 1\n");
		MPI_Finalize();
		return 2;
	}
	buf = malloc((size_t)(bw_size > lat_size ? bw_size : lat_size) * (size_t)window);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);

	bad = pingpong(rank, buf, lat_size, lat_iters, &lat);
	MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("pingpong %ld %ld %.2f\n", lat_size, lat_iters, lat);
	bad = bandwidth(rank, buf, bw_size, window, bw_iters, &mbs);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	total += bad;
	if (rank == 0) {
		printf("bw %ld %d %ld %.1f\n", bw_size, window, bw_iters, mbs);
		printf("bad %ld\n", total);
		fflush(stdout);
	}
	free(buf);
	MPI_Finalize();
	return total ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Classic libpcap files for tests: read captures, write frames for decoders.
 */
#ifndef DROCE_TEST_PCAP_H
#define DROCE_TEST_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct test_frame {
	uint8_t *data;
	uint32_t len;
};

struct test_capture {
	struct test_frame *frames;
	size_t count;
};

/* Loads every frame of a classic pcap (Ethernet link type); 0 on success. */
int test_pcap_load(const char *path, struct test_capture *cap);
void test_pcap_free(struct test_capture *cap);

/* Writes frames to a new classic pcap. */
FILE *test_pcap_create(const char *path);
void test_pcap_write(FILE *f, const void *frame, uint32_t len);

/* Path of a file under tests/data (DROCE_TEST_DATA is set by meson). */
const char *test_data_path(const char *rel);

#endif

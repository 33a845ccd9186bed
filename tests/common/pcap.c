/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <string.h>

#include "pcap.h"

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define LINKTYPE_ETHERNET 1

struct pcap_ghdr {
	uint32_t magic;
	uint16_t vmajor, vminor;
	int32_t thiszone;
	uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rhdr {
	uint32_t ts_sec, ts_frac, incl_len, orig_len;
};

int
test_pcap_load(const char *path, struct test_capture *cap)
{
	struct pcap_ghdr g;
	struct pcap_rhdr r;
	FILE *f = fopen(path, "rb");
	size_t n = 0, alloc = 0;

	memset(cap, 0, sizeof(*cap));
	if (!f)
		return -1;
	if (fread(&g, sizeof(g), 1, f) != 1 || (g.magic != PCAP_MAGIC_US && g.magic != PCAP_MAGIC_NS) ||
	    g.linktype != LINKTYPE_ETHERNET) {
		fclose(f);
		return -1;
	}
	while (fread(&r, sizeof(r), 1, f) == 1) {
		if (r.incl_len > 65536)
			break;
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			cap->frames = realloc(cap->frames, alloc * sizeof(*cap->frames));
		}
		cap->frames[n].data = malloc(r.incl_len ? r.incl_len : 1);
		cap->frames[n].len = r.incl_len;
		if (fread(cap->frames[n].data, 1, r.incl_len, f) != r.incl_len) {
			free(cap->frames[n].data);
			break;
		}
		n++;
	}
	cap->count = n;
	fclose(f);
	return 0;
}

void
test_pcap_free(struct test_capture *cap)
{
	for (size_t i = 0; i < cap->count; i++)
		free(cap->frames[i].data);
	free(cap->frames);
	memset(cap, 0, sizeof(*cap));
}

FILE *
test_pcap_create(const char *path)
{
	struct pcap_ghdr g = { PCAP_MAGIC_US, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET };
	FILE *f = fopen(path, "wb");

	if (f && fwrite(&g, sizeof(g), 1, f) != 1) {
		fclose(f);
		return NULL;
	}
	return f;
}

void
test_pcap_write(FILE *f, const void *frame, uint32_t len)
{
	static uint32_t usec;
	struct pcap_rhdr r = { 0, usec++, len, len };

	fwrite(&r, sizeof(r), 1, f);
	fwrite(frame, 1, len, f);
}

const char *
test_data_path(const char *rel)
{
	static __thread char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", DROCE_TEST_DATA, rel);
	return buf;
}

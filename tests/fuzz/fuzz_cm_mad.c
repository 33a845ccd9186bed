/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: the IB CM MAD codec (verbs_api/cm_mad.c).
 *
 * Any input is a received MAD.  Decode must never read past it; whatever it
 * accepts must encode again, and decoding that encoding must give the same
 * message (no field is lost or widened on the way).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_api/cm_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct droce_cm_msg m, m2;
	uint8_t out[DROCE_MAD_SIZE], out2[DROCE_MAD_SIZE], *mad;

	mad = malloc(size ? size : 1); /* exact size: ASan sees over-reads */
	if (mad == NULL)
		return 0;
	memcpy(mad, data, size);
	memset(&m, 0, sizeof(m));
	if (droce_cm_mad_decode(mad, size, &m) == 0) {
		/* what decode accepts encodes; decoding that gives a message that
		 * encodes to the same bytes (the structs hold pointers into their
		 * buffers, so the encodings are what is compared) */
		if (droce_cm_mad_encode(&m, out) != 0)
			abort();
		memset(&m2, 0, sizeof(m2));
		if (droce_cm_mad_decode(out, sizeof(out), &m2) != 0 ||
		    droce_cm_mad_encode(&m2, out2) != 0 || memcmp(out, out2, sizeof(out)) != 0)
			abort();
		if (m.attr != m2.attr || m.tid != m2.tid || m.private_data_len != m2.private_data_len)
			abort();
	}
	free(mad);
	return 0;
}

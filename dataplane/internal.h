/* SPDX-License-Identifier: BSD-3-Clause
 * Dataplane-wide helpers shared by its modules (not for verbs_api).
 */
#ifndef DROCE_DP_INTERNAL_H
#define DROCE_DP_INTERNAL_H

#include <rte_log.h>

extern int droce_dp_logtype;
#define DP_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, droce_dp_logtype, "droce.dp: " fmt "\n", ##__VA_ARGS__)

/* Waits until every engine has passed a quiescent point. */
void droce_dp_synchronize(void);

#endif

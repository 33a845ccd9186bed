/* SPDX-License-Identifier: BSD-3-Clause
 * pmd_glue internals shared by config.c, runtime.c, port.c and capture.c.
 */
#ifndef DROCE_PMD_GLUE_INTERNAL_H
#define DROCE_PMD_GLUE_INTERNAL_H

#include <rte_common.h>
#include <rte_log.h>

extern int droce_pmd_logtype;
extern int droce_config_logtype;

#define PMD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, droce_pmd_logtype, "droce.pmd: " fmt "\n", ##__VA_ARGS__)
#define CFG_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, droce_config_logtype, "droce.config: " fmt "\n", ##__VA_ARGS__)

/*
 * Records an error: prints "droce: <message>" to stderr, keeps it for
 * droce_last_error(), sets errno to @err.  Always returns -1.
 */
int droce_err_set(int err, const char *fmt, ...) __rte_format_printf(2, 3);
void droce_err_clear(void);

/*
 * Runs @fn(@arg) in the EAL interrupt thread (as an EAL alarm) and waits for
 * it to return, so that it cannot run concurrently with the PMD callbacks
 * that thread serves.  Runs it in the calling thread when that is the
 * interrupt thread, or when the interrupt thread does not run it.
 */
void droce_call_in_intr_thread(void (*fn)(void *), void *arg);

#endif /* DROCE_PMD_GLUE_INTERNAL_H */

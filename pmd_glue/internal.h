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

#endif /* DROCE_PMD_GLUE_INTERNAL_H */

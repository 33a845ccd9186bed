/* SPDX-License-Identifier: BSD-3-Clause
 * A memif client dials its server again (issue 28 §2): called by the port
 * monitor (verbs_api/events.c).
 */
#ifndef DROCE_PMD_GLUE_REDIAL_H
#define DROCE_PMD_GLUE_REDIAL_H

struct droce_port;

/*
 * A memif client port whose server went away (the link is down): DPDK's
 * memif PMD dials its server once per device start, so droce restarts the
 * device to dial again, when somebody listens on the socket.  @quiesce
 * waits until no engine is inside a pass that began before it
 * (droce_dp_synchronize): the port's bursts return nothing from the moment
 * the redial begins until the device started again.  1: dialled (the link
 * comes up when the memif handshake ends), 0: nothing to do (no memif
 * client, link up, no server listening), -1: the restart failed (tried
 * again at the next call).
 */
int droce_port_redial(struct droce_port *p, void (*quiesce)(void));

#endif /* DROCE_PMD_GLUE_REDIAL_H */

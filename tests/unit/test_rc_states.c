/* SPDX-License-Identifier: BSD-3-Clause
 * The RC responder's and completer's state machines (rc.c): every state has a distinct name
 * for the logs, the table ends where the enum does.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "dataplane/internal.h"

Test(rc_states, responder_names)
{
	static const char *const want[] = { "CHECK_QP_STATE", "CHECK_PSN", "CHECK_RESOURCE",
					    "CHECK_OP_SEQ", "EXECUTE", "ACKNOWLEDGE", "SEQ_NAK",
					    "DUPLICATE", "RNR_NAK", "ERR_INV_REQ", "DONE" };
	unsigned int n = sizeof(want) / sizeof(want[0]);

	for (unsigned int i = 0; i < n; i++) {
		const char *name = droce_rc_resp_state_name(i);

		cr_assert_not_null(name, "state %u has no name", i);
		cr_assert_str_eq(name, want[i], "state %u", i);
		for (unsigned int j = 0; j < i; j++)
			cr_assert_str_neq(name, droce_rc_resp_state_name(j));
	}
	cr_assert_null(droce_rc_resp_state_name(n), "the table ends with DONE");
	cr_assert_null(droce_rc_resp_state_name(~0u));
}

Test(rc_states, completer_names)
{
	static const char *const want[] = { "CHECK_WINDOW", "CHECK_GHOST", "CHECK_SYNDROME",
					    "ACK", "RNR_NAK", "SEQ_NAK", "ERR_NAK", "DONE" };
	unsigned int n = sizeof(want) / sizeof(want[0]);

	for (unsigned int i = 0; i < n; i++) {
		const char *name = droce_rc_comp_state_name(i);

		cr_assert_not_null(name, "state %u has no name", i);
		cr_assert_str_eq(name, want[i], "state %u", i);
		for (unsigned int j = 0; j < i; j++)
			cr_assert_str_neq(name, droce_rc_comp_state_name(j));
	}
	cr_assert_null(droce_rc_comp_state_name(n), "the table ends with DONE");
}

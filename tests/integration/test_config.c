/* SPDX-License-Identifier: BSD-3-Clause
 * Config loader: valid files load, and every kind of error is refused with a
 * message naming the file, section, key and value.  No EAL is needed here
 * except where droce-loop runs as a child process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "proc.h"

static char tmp_path[64];

static const char *
write_ini(const char *text)
{
	int fd;

	if (tmp_path[0] != '\0')
		unlink(tmp_path); /* the test's previous file: one left at most */
	snprintf(tmp_path, sizeof(tmp_path), "/tmp/droce-cfg-XXXXXX");
	fd = mkstemp(tmp_path);
	cr_assert(fd >= 0);
	cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	return tmp_path;
}

static void
cleanup_tmp(void)
{
	if (tmp_path[0] != '\0')
		unlink(tmp_path);
}

TestSuite(config, .fini = cleanup_tmp);

#define GOOD_PORTS                                   \
	"[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\n" \
	"[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n"

/* Loads @text from a file and expects failure with every @needles substring. */
static void
expect_error(const char *text, int err, const char *const *needles)
{
	struct droce_config *cfg = malloc(sizeof(*cfg));
	const char *path = write_ini(text);
	const char *msg;

	cr_assert_not_null(cfg);
	errno = 0;
	cr_assert_eq(droce_config_load(path, cfg), -1, "config loaded but should not:\n%s", text);
	cr_expect_eq(errno, err, "errno %d, expected %d", errno, err);
	msg = droce_last_error();
	cr_expect(strstr(msg, path) != NULL, "message does not name the file: %s", msg);
	for (; *needles != NULL; needles++)
		cr_expect(strstr(msg, *needles) != NULL, "message lacks '%s': %s", *needles, msg);
	free(cfg);
}

Test(config, embedded_default)
{
	struct droce_config cfg;

	cr_assert_eq(droce_config_load_default(&cfg), 0, "%s", droce_last_error());
	cr_assert_eq(cfg.n_ports, 2);
	cr_expect_eq(cfg.ports[0].kind, DROCE_PORT_KIND_RING);
	cr_expect_eq(cfg.ports[0].peer, 1);
	cr_expect_eq(cfg.ports[1].peer, 0);
	cr_expect_eq(cfg.ports[0].n_gids, 1);
	/* 198.18.0.1 as ::ffff:198.18.0.1 */
	cr_expect_eq(cfg.ports[0].gids[0][10], 0xff);
	cr_expect_eq(cfg.ports[0].gids[0][12], 198);
	cr_expect_eq(cfg.ports[0].gids[0][13], 18);
	cr_expect_eq(cfg.ports[1].gids[0][15], 2);
	cr_expect(cfg.ports[0].mac_set);
	cr_expect_eq(cfg.ports[1].mac[5], 0x02);
	cr_expect_eq(cfg.ports[0].mtu, 1500);
	cr_expect_eq(cfg.engine_mode, DROCE_ENGINE_MODE_COLOCATED);
	cr_expect_eq(cfg.n_engines, 1);
	cr_expect_geq(cfg.n_eal_args, 2);
	cr_expect_str_eq(cfg.eal_args[0], "--no-huge");
	cr_expect_str_eq(cfg.eal_args[1], "--no-pci");
}

Test(config, full_file_parses)
{
	struct droce_config cfg;
	const char *path = write_ini(
		"; comment\n"
		"[eal]\nargs = --no-huge --no-pci -l 0-1   # trailing comment\n"
		"[engines]\nmode = dedicated\nlcores = 1,3-4\n"
		"[mempool]\nmbufs = 2047\ncache = 64\ndata_room = 9300\ncapture_mbufs = 255\n"
		"[port0]\nkind = memif\nrole = client\nsocket = /tmp/droce-test.sock\nid = 3\n"
		"mac = 02:00:c6:12:00:09\nipv4 = 198.18.0.9, 198.18.0.10\nipv6 = fd00::9\n"
		"mtu = 9000\nrxq = 2\ntxq = 2\nrxd = 512\ntxd = 256\nvlan = 100\n"
		"capture = /tmp/x.pcapng\n"
		"[port1]\nkind = af_xdp\niface = veth1\nqueue = 2\nipv6 = fd00::1\n"
		"[port2]\nkind = tap\niface = dtap0\nipv4 = 198.18.1.1\n"
		"[port3]\nkind = af_packet\niface = veth0\nipv4 = 198.18.1.2\n");

	cr_assert_eq(droce_config_load(path, &cfg), 0, "%s", droce_last_error());
	cr_expect_eq(cfg.n_eal_args, 4);
	cr_expect_eq(cfg.engine_mode, DROCE_ENGINE_MODE_DEDICATED);
	cr_assert_eq(cfg.n_engines, 3);
	cr_expect_eq(cfg.engine_lcores[0], 1);
	cr_expect_eq(cfg.engine_lcores[2], 4);
	cr_expect_eq(cfg.mbufs, 2047);
	cr_expect_eq(cfg.data_room, 9300);
	cr_expect_eq(cfg.n_ports, 4);
	cr_expect_eq(cfg.ports[0].kind, DROCE_PORT_KIND_MEMIF);
	cr_expect_eq(cfg.ports[0].memif_role, DROCE_MEMIF_ROLE_CLIENT);
	cr_expect_str_eq(cfg.ports[0].memif_socket, "/tmp/droce-test.sock");
	cr_expect_eq(cfg.ports[0].memif_id, 3);
	cr_expect_eq(cfg.ports[0].n_gids, 3);
	cr_expect_eq(cfg.ports[0].gids[2][0], 0xfd);
	cr_expect_eq(cfg.ports[0].mtu, 9000);
	cr_expect_eq(cfg.ports[0].rxq, 2);
	cr_expect_eq(cfg.ports[0].vlan, 100);
	cr_expect_str_eq(cfg.ports[0].capture, "/tmp/x.pcapng");
	cr_expect_eq(cfg.ports[1].xdp_queue, 2);
	cr_expect_str_eq(cfg.ports[2].iface, "dtap0");
	cr_expect_eq(cfg.ports[3].kind, DROCE_PORT_KIND_AF_PACKET);
}

Test(config, bad_key)
{
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nspeed = 100\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "[port0]", "speed", "100", "unknown key", NULL });
}

Test(config, bad_value_mtu)
{
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nmtu = 99999\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		     EINVAL,
		     (const char *[]){ "[port0] mtu = 99999", "not a valid MTU (256..9000)", NULL });
}

Test(config, bad_value_ipv4)
{
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.300\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "[port0] ipv4 = 198.18.0.300", "IPv4", NULL });
}

Test(config, bad_value_mac)
{
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nmac = 01:00:5e:00:00:01\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "[port0] mac = 01:00:5e:00:00:01", "unicast", NULL });
}

Test(config, bad_value_kind)
{
	expect_error("[port0]\nkind = infiniband\nipv4 = 198.18.0.1\n", EINVAL,
		     (const char *[]){ "[port0] kind = infiniband", "not a port kind", NULL });
}

Test(config, unknown_section)
{
	expect_error("[eal]\nargs = --no-huge\n[ports]\nkind = ring\n" GOOD_PORTS, EINVAL,
		     (const char *[]){ "[ports]", "unknown section", NULL });
}

Test(config, missing_file)
{
	struct droce_config cfg;

	errno = 0;
	cr_assert_eq(droce_config_load("/nonexistent/droce.ini", &cfg), -1);
	cr_expect_eq(errno, ENOENT);
	cr_expect(strstr(droce_last_error(), "/nonexistent/droce.ini") != NULL, "%s",
		  droce_last_error());
	cr_expect(strstr(droce_last_error(), "No such file") != NULL, "%s", droce_last_error());
}

Test(config, key_of_other_kind)
{
	expect_error("[port0]\nkind = ring\npeer = port1\niface = eth0\nipv4 = 198.18.0.1\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "[port0] iface = eth0", "kind = ring", NULL });
}

Test(config, duplicate_key)
{
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nmtu = 1500\nmtu = 4000\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "[port0] mtu", "twice", NULL });
}

Test(config, duplicate_section)
{
	expect_error(GOOD_PORTS "[port0]\nkind = ring\n", EINVAL,
		     (const char *[]){ "[port0]", "twice", NULL });
}

Test(config, syntax_error_has_line)
{
	expect_error("[port0]\nkind = ring\nthis line is wrong\n", EINVAL,
		     (const char *[]){ ":3:", "this line is wrong", NULL });
}

Test(config, empty_value)
{
	expect_error("[port0]\nkind =\n", EINVAL, (const char *[]){ ":2:", "kind", "empty", NULL });
}

Test(config, ring_peer_mismatch)
{
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\n"
		     "[port1]\nkind = ring\npeer = port1\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "peer = port1", NULL });
}

Test(config, port_gap)
{
	expect_error("[port0]\nkind = tap\niface = t0\nipv4 = 198.18.0.1\n"
		     "[port2]\nkind = tap\niface = t2\nipv4 = 198.18.0.2\n",
		     EINVAL, (const char *[]){ "[port1] missing", NULL });
}

Test(config, port_without_address)
{
	expect_error("[port0]\nkind = tap\niface = t0\n", EINVAL,
		     (const char *[]){ "[port0]", "ipv4", NULL });
}

Test(config, data_room_too_small)
{
	expect_error("[mempool]\ndata_room = 2176\n"
		     "[port0]\nkind = tap\niface = t0\nipv4 = 198.18.0.1\nmtu = 9000\n",
		     EINVAL, (const char *[]){ "[mempool] data_room = 2176", "mtu = 9000", NULL });
}

Test(config, pci_with_no_pci)
{
	expect_error("[eal]\nargs = --no-huge --no-pci\n"
		     "[port0]\nkind = pci\npci = 0000:03:00.0\nipv4 = 198.18.0.1\n",
		     EINVAL, (const char *[]){ "[port0] kind = pci", "--no-pci", NULL });
}

Test(config, engines_mode)
{
	expect_error("[engines]\nmode = turbo\n" GOOD_PORTS, EINVAL,
		     (const char *[]){ "[engines] mode = turbo", "dedicated or colocated", NULL });
}

Test(config, capture_override)
{
	struct droce_config cfg;

	cr_assert_eq(droce_config_load_default(&cfg), 0);
	cr_expect_eq(droce_config_set_capture(&cfg, "port1=/tmp/p1.pcapng"), 0);
	cr_expect_str_eq(cfg.ports[1].capture, "/tmp/p1.pcapng");
	cr_expect_eq(droce_config_set_capture(&cfg, "port7=/tmp/p7.pcapng"), -1);
	cr_expect(strstr(droce_last_error(), "port7") != NULL, "%s", droce_last_error());
	cr_expect_eq(droce_config_set_capture(&cfg, "nonsense"), -1);
}

/* droce_start() refuses a bad file before touching the EAL. */
Test(config, start_refuses_bad_config)
{
	const char *path = write_ini("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nmtu = 99999\n");

	cr_assert_eq(droce_start(path), -1);
	cr_expect(!droce_running());
	cr_expect(strstr(droce_last_error(), "mtu = 99999") != NULL, "%s", droce_last_error());
}

/* DROCE_CONFIG is honoured by droce_start(NULL). */
Test(config, start_uses_env)
{
	setenv("DROCE_CONFIG", "/nonexistent/from-env.ini", 1);
	cr_assert_eq(droce_start(NULL), -1);
	cr_expect_eq(errno, ENOENT);
	cr_expect(strstr(droce_last_error(), "/nonexistent/from-env.ini") != NULL, "%s",
		  droce_last_error());
}

Test(config, droce_loop_bad_config_exits_nonzero)
{
	const char *path = write_ini("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nmtu = 99999\n"
				     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n");
	char args[128], out[8192];

	snprintf(args, sizeof(args), "-c %s -n 10", path);
	cr_expect_neq(tc_run_prog("DROCE_LOOP", args, out, sizeof(out)), 0);
	cr_expect(strstr(out, path) != NULL, "%s", out);
	cr_expect(strstr(out, "[port0] mtu = 99999: not a valid MTU (256..9000)") != NULL, "%s", out);
	cr_expect(strstr(out, "PASS") == NULL, "%s", out);
}

Test(config, droce_loop_missing_config_exits_nonzero)
{
	char out[8192];

	cr_expect_neq(tc_run_prog("DROCE_LOOP", "-c /nonexistent/x.ini", out, sizeof(out)), 0);
	cr_expect(strstr(out, "/nonexistent/x.ini") != NULL, "%s", out);
}

Test(config, droce_loop_default_passes, .timeout = 60)
{
	char out[16384];

	cr_expect_eq(tc_run_prog("DROCE_LOOP", "-n 2000 -s 512", out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "PASS") != NULL, "%s", out);
	cr_expect(strstr(out, "port0->port1: sent 2000 frames") != NULL, "%s", out);
	cr_expect(strstr(out, "intact 2000") != NULL, "%s", out);
}

/* [dcqcn] and the ports' ECN keys (issue 25): values land in the config,
 * unset reaction point keys stay DROCE_DCQCN_UNSET (the algorithm's). */
Test(config, dcqcn_section)
{
	struct droce_config *cfg = malloc(sizeof(*cfg));
	const char *path = write_ini("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\n"
				     "ecn = off\ntclass = 96\npcp = 4\nimpair_ce = 0.5%\n"
				     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n"
				     "[dcqcn]\nalgorithm = paper\nmin_time_between_cnps = 50\n"
				     "cnp_dscp = 26\nrpg_ai_rate = 40\nrpg_gd = 10\n");

	cr_assert_not_null(cfg);
	cr_assert_eq(droce_config_load(path, cfg), 0, "%s", droce_last_error());
	cr_assert_eq(cfg->ports[0].ecn, DROCE_ECN_NOT_ECT);
	cr_assert_eq(cfg->ports[1].ecn, DROCE_ECN_ECT0, "ECT(0) by default");
	cr_assert_eq(cfg->ports[0].tclass, 96);
	cr_assert_eq(cfg->ports[0].pcp, 4);
	cr_assert_float_eq(cfg->ports[0].impair.ce, 0.005, 1e-9);
	cr_assert_eq(cfg->dcqcn.algorithm, DROCE_DCQCN_PAPER);
	cr_assert_eq(cfg->dcqcn.np_enable, 1);
	cr_assert_eq(cfg->dcqcn.rp_enable, 1);
	cr_assert_eq(cfg->dcqcn.min_time_between_cnps, 50);
	cr_assert_eq(cfg->dcqcn.cnp_dscp, 26);
	cr_assert_eq(cfg->dcqcn.cnp_802p_prio, 6);
	cr_assert_eq(cfg->dcqcn.rp.rpg_ai_rate, 40);
	cr_assert_eq(cfg->dcqcn.rp.rpg_gd, 10);
	cr_assert_eq(cfg->dcqcn.rp.rpg_time_reset, DROCE_DCQCN_UNSET);
	free(cfg);
}

Test(config, dcqcn_bad_values)
{
	expect_error(GOOD_PORTS "[dcqcn]\nrpg_gd = 3\n", EINVAL,
		     (const char *[]){ "[dcqcn] rpg_gd = 3", "log2 divisor of alpha (10..15)", NULL });
	expect_error(GOOD_PORTS "[dcqcn]\nalgorithm = timely\n", EINVAL,
		     (const char *[]){ "[dcqcn] algorithm = timely", "mlx5 or paper", NULL });
	expect_error(GOOD_PORTS "[dcqcn]\ncnp_dscp = 64\n", EINVAL,
		     (const char *[]){ "[dcqcn] cnp_dscp = 64", "DSCP (0..63)", NULL });
	expect_error(GOOD_PORTS "[dcqcn]\nrp_timer = 5\n", EINVAL,
		     (const char *[]){ "[dcqcn]", "rp_timer", "unknown key", NULL });
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\necn = ce\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n", EINVAL,
		     (const char *[]){ "[port0] ecn = ce", "ect0, ect1 or off", NULL });
	expect_error("[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\nimpair_ce = 2\n"
		     "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n", EINVAL,
		     (const char *[]){ "[port0] impair_ce = 2", "probability", NULL });
}

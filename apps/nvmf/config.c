/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf's subsystems and namespaces: from the command line
 * (--nqn, --mem SIZE, --file PATH[:SIZE]) or an INI file of its own:
 *
 *   [target]                 [subsystem]            (repeatable)
 *   address = 198.18.0.1     nqn = nqn.2026-11.dev.droce:disk1
 *   port = 4420              mem = 64M               (a namespace each line,
 *   workers = 4              file = /var/tmp/d1:256M  in NSID order)
 *   block = 512
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target.h"

unsigned int nvmf_block_shift = 9;

static int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': v <<= 10; end++; break;
	case 'M': v <<= 20; end++; break;
	case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end != '\0' || v == 0)
		return -1;
	*out = v;
	return 0;
}

int
nvmf_add_subsys(const char *nqn)
{
	struct nvmf_subsys *s;

	if (nvmf_tgt.n_subsys == NVMF_MAX_SUBSYS || strlen(nqn) >= NVMF_NQN_SIZE ||
	    strncmp(nqn, "nqn.", 4) != 0 || strcmp(nqn, NVMF_DISC_NQN) == 0) {
		fprintf(stderr, "droce-nvmf: bad or too many subsystems: %s\n", nqn);
		return -1;
	}
	for (unsigned int i = 0; i < nvmf_tgt.n_subsys; i++)
		if (strcmp(nvmf_tgt.subsys[i].nqn, nqn) == 0) {
			fprintf(stderr, "droce-nvmf: subsystem %s given twice\n", nqn);
			return -1;
		}
	s = &nvmf_tgt.subsys[nvmf_tgt.n_subsys++];
	memset(s, 0, sizeof(*s));
	snprintf(s->nqn, sizeof(s->nqn), "%s", nqn);
	snprintf(s->sn, sizeof(s->sn), "DROCE%08X%03u", (unsigned int)getpid(), nvmf_tgt.n_subsys);
	nvmf_tgt.genctr++;
	return 0;
}

/* "mem:SIZE" or "file:PATH[:SIZE]": a namespace of the last subsystem. */
int
nvmf_add_ns(const char *spec)
{
	struct nvmf_subsys *s;
	struct nvmf_ns *ns;
	const char *colon;

	if (nvmf_tgt.n_subsys == 0 && nvmf_add_subsys("nqn.2026-11.dev.droce:nvmf") != 0)
		return -1;
	s = &nvmf_tgt.subsys[nvmf_tgt.n_subsys - 1];
	if (s->n_ns == NVMF_MAX_NS) {
		fprintf(stderr, "droce-nvmf: %s: at most %d namespaces\n", s->nqn, NVMF_MAX_NS);
		return -1;
	}
	ns = &s->ns[s->n_ns];
	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
	if (strncmp(spec, "mem:", 4) == 0) {
		ns->kind = NVMF_NS_MEM;
		if (parse_size(spec + 4, &ns->size) != 0)
			goto bad;
	} else if (strncmp(spec, "file:", 5) == 0) {
		ns->kind = NVMF_NS_FILE;
		colon = strchr(spec + 5, ':');
		if (colon && parse_size(colon + 1, &ns->size) != 0)
			goto bad;
		snprintf(ns->path, sizeof(ns->path), "%.*s",
			 (int)(colon ? (size_t)(colon - spec - 5) : strlen(spec + 5)), spec + 5);
		if (ns->path[0] == '\0')
			goto bad;
	} else {
		goto bad;
	}
	ns->nsid = ++s->n_ns;
	return 0;
bad:
	fprintf(stderr, "droce-nvmf: bad namespace '%s' (mem:SIZE or file:PATH[:SIZE])\n", spec);
	return -1;
}

/* FNV-1a over the subsystem NQN and NSID: an NGUID stable across restarts and
 * distinct between subsystems (Linux refuses duplicate IDs). */
static void
make_nguid(const struct nvmf_subsys *s, struct nvmf_ns *ns)
{
	uint64_t h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };

	for (int k = 0; k < 2; k++) {
		for (const char *p = s->nqn; *p; p++)
			h[k] = (h[k] ^ (uint8_t)*p) * 0x100000001b3ull;
		h[k] = (h[k] ^ ns->nsid) * 0x100000001b3ull;
	}
	memcpy(ns->nguid, h, sizeof(ns->nguid));
}

static int
ns_open(struct nvmf_subsys *s, struct nvmf_ns *ns)
{
	uint64_t mask;
	struct stat st;

	ns->lba_shift = nvmf_block_shift;
	mask = (1ull << ns->lba_shift) - 1;
	make_nguid(s, ns);
	if (ns->kind == NVMF_NS_MEM) {
		ns->size &= ~mask;
		if (ns->size == 0)
			return -1;
		/* anonymous memory: zero-filled, page-aligned, unallocated until written */
		ns->mem = mmap(NULL, ns->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ns->mem == MAP_FAILED) {
			ns->mem = NULL;
			return -1;
		}
		return 0;
	}
	ns->fd = open(ns->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (ns->fd < 0 || fstat(ns->fd, &st) != 0) {
		perror(ns->path);
		return -1;
	}
	if (ns->size == 0) {
		if (S_ISBLK(st.st_mode)) {
			off_t end = lseek(ns->fd, 0, SEEK_END);

			ns->size = end > 0 ? (uint64_t)end : 0;
		} else {
			ns->size = (uint64_t)st.st_size;
		}
	} else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < ns->size &&
		   ftruncate(ns->fd, (off_t)ns->size) != 0) {
		perror(ns->path);
		return -1;
	}
	ns->size &= ~mask;
	if (ns->size == 0) {
		fprintf(stderr, "droce-nvmf: %s: empty (give a size: file:PATH:SIZE)\n", ns->path);
		return -1;
	}
	return 0;
}

int
nvmf_ns_open_all(void)
{
	struct nvmf_subsys *d = &nvmf_tgt.disc;

	memset(d, 0, sizeof(*d));
	snprintf(d->nqn, sizeof(d->nqn), "%s", NVMF_DISC_NQN);
	snprintf(d->sn, sizeof(d->sn), "DROCEDISC%08X", (unsigned int)getpid());
	d->discovery = true;
	for (unsigned int i = 0; i < nvmf_tgt.n_subsys; i++)
		for (unsigned int n = 0; n < nvmf_tgt.subsys[i].n_ns; n++)
			if (ns_open(&nvmf_tgt.subsys[i], &nvmf_tgt.subsys[i].ns[n]) != 0)
				return -1;
	return 0;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int
nvmf_config_ini(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], sec[64] = "";
	unsigned int lineno = 0;
	int rc = 0;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		char *l = trim(line), *eq, *k, *v;
		char spec[300];
		uint64_t n;

		lineno++;
		if (*l == '\0' || *l == '#' || *l == ';')
			continue;
		if (*l == '[') {
			snprintf(sec, sizeof(sec), "%.*s", (int)strcspn(l + 1, "]"), l + 1);
			if (strcmp(sec, "target") != 0 && strcmp(sec, "subsystem") != 0)
				rc = -1;
			continue;
		}
		eq = strchr(l, '=');
		if (eq == NULL) {
			rc = -1;
			break;
		}
		*eq = '\0';
		k = trim(l);
		v = trim(eq + 1);
		if (strcmp(sec, "target") == 0 && strcmp(k, "address") == 0)
			snprintf(nvmf_tgt.addr, sizeof(nvmf_tgt.addr), "%s", v);
		else if (strcmp(sec, "target") == 0 && strcmp(k, "port") == 0 &&
			 parse_size(v, &n) == 0 && n < 65536)
			nvmf_tgt.port = (uint16_t)n;
		else if (strcmp(sec, "target") == 0 && strcmp(k, "workers") == 0 &&
			 parse_size(v, &n) == 0 && n <= 16)
			nvmf_tgt.workers = (unsigned int)n;
		else if (strcmp(sec, "target") == 0 && strcmp(k, "block") == 0 &&
			 (strcmp(v, "512") == 0 || strcmp(v, "4096") == 0))
			nvmf_block_shift = strcmp(v, "512") == 0 ? 9 : 12;
		else if (strcmp(sec, "subsystem") == 0 && strcmp(k, "nqn") == 0)
			rc = nvmf_add_subsys(v);
		else if (strcmp(sec, "subsystem") == 0 && (strcmp(k, "mem") == 0 || strcmp(k, "file") == 0)) {
			snprintf(spec, sizeof(spec), "%s:%s", k, v);
			rc = nvmf_add_ns(spec);
		} else
			rc = -1;
	}
	fclose(f);
	if (rc != 0)
		fprintf(stderr, "droce-nvmf: %s:%u: bad line (section [%s])\n", path, lineno, sec);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * The memif disconnect guard (issue 28 §2): works around DPDK 22.11's memif
 * PMD, which unmaps a connection's shared regions while an engine may be
 * inside a burst on them.
 *
 * When the peer goes away, the EAL interrupt thread runs the PMD's
 * memif_disconnect(): it clears the device's CONNECTED flag, closes the
 * queues' event fds, then memif_free_regions() munmap()s the rings and
 * buffers the bursts read and write.  Every burst checks the flag first, but
 * one that checked it just before goes on in memory that is gone: SIGSEGV in
 * eth_memif_tx in the survivor of a killed peer.  The PMD offers no hook, so
 * droce routes the PMD's own munmap() calls (its GOT entry, found through
 * its dynamic section: no other library's calls change) through
 * guarded_munmap(), which first waits until no engine is inside a pass that
 * began before (the quiesce function the engines registered,
 * droce_dp_synchronize).  A burst that begins later sees the flag cleared
 * and touches nothing; so the unmap is safe.  The PMD's unmaps are rare
 * (a disconnect, a failed connection, a port's teardown) and none happens
 * inside an engine pass, so the wait cannot deadlock.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "internal.h"
#include "memif_guard.h"

#define MEMIF_LIB "librte_net_memif.so"

typedef int (*munmap_fn)(void *, size_t);

static munmap_fn real_munmap;      /* what the PMD's GOT held */
static void (*quiesce_fn)(void);  /* NULL: no engines to wait for */
static bool patched;

static int
guarded_munmap(void *addr, size_t len)
{
	void (*q)(void) = __atomic_load_n(&quiesce_fn, __ATOMIC_ACQUIRE);

	if (q != NULL)
		q();
	return real_munmap(addr, len);
}

struct lib {
	ElfW(Addr) base;
	const ElfW(Dyn) *dyn;
};

static int
find_memif(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lib *l = arg;

	(void)size;
	if (info->dlpi_name == NULL || strstr(info->dlpi_name, MEMIF_LIB) == NULL)
		return 0;
	for (unsigned int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
			l->base = info->dlpi_addr;
			l->dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
			return 1;
		}
	return 0;
}

/* A dynamic-section address: ld.so relocated it in place, or not. */
static uintptr_t
dyn_ptr(const struct lib *l, ElfW(Addr) p)
{
	return p < l->base ? l->base + p : p;
}

/* Points the GOT slot of every munmap relocation in @rela[0..n) at the guard. */
static unsigned int
patch_table(const struct lib *l, const ElfW(Rela) *rela, size_t n, const ElfW(Sym) *symtab,
	    const char *strtab)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned int done = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned long type = ELF64_R_TYPE(rela[i].r_info);
		const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(rela[i].r_info)];
		munmap_fn *slot = (munmap_fn *)(l->base + rela[i].r_offset);
		uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)(page - 1);

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    strcmp(strtab + sym->st_name, "munmap") != 0)
			continue;
		if (*slot == guarded_munmap)
			continue;
		/* RELRO: the GOT is read-only once relocated */
		if (mprotect((void *)pg, (size_t)page, PROT_READ | PROT_WRITE) != 0)
			continue;
		real_munmap = *slot;
		__atomic_store_n(slot, guarded_munmap, __ATOMIC_RELEASE);
		mprotect((void *)pg, (size_t)page, PROT_READ);
		done++;
	}
	return done;
}

static void
patch_memif(void)
{
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmprel_sz = 0, rela_sz = 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	struct lib l = { 0, NULL };
	unsigned int n;

	if (!dl_iterate_phdr(find_memif, &l) || l.dyn == NULL)
		return; /* no memif PMD in this process */
	for (const ElfW(Dyn) *d = l.dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(&l, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmprel_sz = d->d_un.d_val; break;
		case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(&l, d->d_un.d_ptr); break;
		case DT_RELASZ: rela_sz = d->d_un.d_val; break;
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(&l, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(&l, d->d_un.d_ptr); break;
		default: break;
		}
	}
	if (symtab == NULL || strtab == NULL)
		return;
	n = 0;
	if (jmprel != NULL)
		n += patch_table(&l, jmprel, jmprel_sz / sizeof(*jmprel), symtab, strtab);
	if (rela != NULL)
		n += patch_table(&l, rela, rela_sz / sizeof(*rela), symtab, strtab);
	patched = n != 0;
	if (!patched)
		PMD_LOG(WARNING, "memif: its munmap is not guarded (no GOT entry found): a memif peer "
				 "that dies may crash an engine inside a burst");
}

static void
intr_flush(void *arg)
{
	(void)arg;
}

void
droce_memif_guard_set(void (*quiesce)(void))
{
	if (quiesce != NULL && !patched)
		patch_memif();
	__atomic_store_n(&quiesce_fn, quiesce, __ATOMIC_RELEASE);
	if (quiesce == NULL && patched)
		droce_call_in_intr_thread(intr_flush, NULL); /* an unmap inside the old one ended */
}

bool
droce_memif_guarded(void)
{
	return patched;
}

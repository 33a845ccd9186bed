#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""abi_exports: droce's five drop-in libraries export every symbol, at every
version node, that Debian's rdma-core 44 libraries of the same names export,
except what exclusions.txt excludes (with its reason).

Usage: check_exports.py COMPAT_DIR EXCLUSIONS [SYSTEM_LIBDIR]

Reads both sides with `nm -D --defined-only --with-symbol-versions`, so the
default (@@) and compat (@) versions are compared as what they are.  Prints
TAP: one test point per library, the missing entries listed under a failing
one; notes (not failures) for excluded entries droce exports after all (a
pending group whose branch was merged) and for exclusions naming nothing.
"""
import os
import subprocess
import sys

LIBS = ['libibverbs.so.1', 'librdmacm.so.1', 'libmlx5.so.1', 'libmlx4.so.1', 'libefa.so.1']


def exports(path):
    """The set of name@VER / name@@VER / node entries a library defines."""
    out = subprocess.run(['nm', '-D', '--defined-only', '--with-symbol-versions', path],
                         check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == 'A' and '@' not in name:
            names.add(name)                     # a version node
        elif kind == 'A' and name.split('@')[0] == name.split('@')[-1]:
            names.add(name.split('@')[0])       # a node, printed as NODE@@NODE
        else:
            names.add(name)
    return names


def read_exclusions(path):
    groups, excl = {}, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            parts = line.split(None, 2)
            if parts[0] == 'group':
                groups[parts[1]] = parts[2] if len(parts) > 2 else ''
                continue
            if len(parts) != 3:
                sys.exit(f'{path}:{n}: expected LIBRARY ENTRY GROUP')
            lib, entry, group = parts
            if group not in groups:
                sys.exit(f'{path}:{n}: group {group} not declared before')
            excl.setdefault(lib, {})[entry] = group
    return groups, excl


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    compat, excl_path = sys.argv[1], sys.argv[2]
    sysdir = sys.argv[3] if len(sys.argv) > 3 else '/usr/lib/x86_64-linux-gnu'
    groups, excl = read_exclusions(excl_path)
    print(f'1..{len(LIBS)}')
    failed = 0
    for i, lib in enumerate(LIBS, 1):
        ref_path, our_path = os.path.join(sysdir, lib), os.path.join(compat, lib)
        if not os.path.exists(ref_path):
            print(f'ok {i} - {lib} # SKIP {ref_path} is not installed')
            continue
        if not os.path.exists(our_path):
            print(f'not ok {i} - {lib}: {our_path} missing')
            failed += 1
            continue
        ref, ours = exports(ref_path), exports(our_path)
        lib_excl = excl.get(lib, {})
        missing = sorted(e for e in ref - ours if e not in lib_excl)
        excluded = sorted(e for e in ref - ours if e in lib_excl)
        if missing:
            failed += 1
            print(f'not ok {i} - {lib}: {len(missing)} of {len(ref)} missing and not excluded')
            for e in missing:
                print(f'#   missing {e}')
        else:
            print(f'ok {i} - {lib}: {len(ref) - len(excluded)} of {len(ref)} exported, '
                  f'{len(excluded)} excluded')
        for g in sorted(set(lib_excl.values())):
            n = sum(1 for e in excluded if lib_excl[e] == g)
            if n:
                print(f'#   excluded ({g}): {n}')
        for e in sorted(e for e in lib_excl if e in ours):
            print(f'# note: {lib} {e} is excluded ({lib_excl[e]}) but exported: '
                  'remove the line')
        for e in sorted(e for e in lib_excl if e not in ref):
            print(f'# note: {lib} {e} is excluded but {ref_path} does not export it')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""abi_load: every object of Debian's RDMA consumers loads on droce's
libraries, under droce-run's environment, with every symbol bound at once.

Usage: load_check.py BUILD_DIR [--exclusions FILE] [PACKAGE...]

For each ELF file of the packages (default: python3-pyverbs, libfabric1,
libfabric-bin, libucx0, ucx-utils, fio, ibverbs-utils, rdmacm-utils,
perftest) that loads one of the five RDMA libraries (every pyverbs module
counts):
  - `droce-run ldd -r OBJ` (LD_BIND_NOW, LD_WARN): each of the five it loads
    must be droce's (BUILD_DIR/compat), and no symbol or version node of
    theirs may be missing; symbols of other libraries are not judged (a
    Python module's Py* come from the interpreter, fio's engines from fio);
  - a shared object is also dlopen()ed with RTLD_NOW in a python3 process
    started by droce-run (the interpreter provides the Python API), and the
    loader's error, naming the first missing symbol, fails it.
TAP, one test point per object; a package that is not installed is a skip.
An object whose only missing symbols are in a "pending-*" group of the
exclusions file (another branch provides them) is a skip naming them.
"""
import os
import re
import subprocess
import sys

RDMA_LIBS = ['libibverbs.so.1', 'librdmacm.so.1', 'libmlx5.so.1', 'libmlx4.so.1', 'libefa.so.1']
SYS_LIBDIR = '/usr/lib/x86_64-linux-gnu'
PACKAGES = ['python3-pyverbs', 'libfabric1', 'libfabric-bin', 'libucx0', 'ucx-utils', 'fio',
            'ibverbs-utils', 'rdmacm-utils', 'perftest']
DLOPEN = ('import ctypes, os, sys\n'
          'try:\n'
          '    ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n'
          'except OSError as e:\n'
          '    print(e)\n'
          '    sys.exit(1)\n')


def rdma_names():
    """Symbol names and version nodes Debian's five libraries define."""
    syms, nodes = set(), set()
    for lib in RDMA_LIBS:
        path = os.path.join(SYS_LIBDIR, lib)
        if not os.path.exists(path):
            continue
        out = subprocess.run(['nm', '-D', '--defined-only', '--with-symbol-versions', path],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 3:
                continue
            name = parts[2]
            if parts[1] == 'A':
                nodes.add(name.split('@')[0])
            else:
                syms.add(name.split('@')[0])
    return syms, nodes


def package_elves(pkg):
    """The ELF files a package installs (None when it is not installed)."""
    r = subprocess.run(['dpkg-query', '-L', pkg], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    files = []
    for path in r.stdout.splitlines():
        if not os.path.isfile(path) or os.path.islink(path) or '/debug/' in path:
            continue
        try:
            with open(path, 'rb') as f:
                if f.read(4) != b'\x7fELF':
                    continue
        except OSError:
            continue
        files.append(path)
    return sorted(files)


LDD_LIB = re.compile(r'^\s*(\S+) => (\S+)')
LDD_UNDEF = re.compile(r'^undefined symbol: ([^,\s]+)(?:, version (\S+))?\s+\((\S+)\)')
LDD_ERROR = re.compile(r'error while loading shared libraries: (.*)')
LDD_NOVER = re.compile(r"^(?:\S+: )?(\S+): version `([^']+)' not found \(required by (\S+)\)")


def check(build, obj, is_so, force, syms, nodes):
    """None when @obj loads none of the five (and @force is false), else a
    list of problems (empty: it loads)."""
    env = dict(os.environ, LC_ALL='C')
    droce_run = os.path.join(build, 'droce-run')
    compat = os.path.realpath(os.path.join(build, 'compat'))
    r = subprocess.run([droce_run, 'ldd', '-r', obj], capture_output=True, text=True, env=env,
                       timeout=60)
    out = r.stdout + r.stderr
    loaded = {}
    problems = []
    errors = []
    for line in out.splitlines():
        m = LDD_LIB.match(line)
        if m and m.group(1) in RDMA_LIBS:
            loaded[m.group(1)] = m.group(2)
        m = LDD_ERROR.search(line)
        if m:
            errors.append(m.group(1).strip())
    # a library that fails to load (a truncated or missing file) hides the
    # list: such an object is judged when the error names one of the five
    if not loaded and not force and not any(lib in e for e in errors for lib in RDMA_LIBS):
        return None
    problems += [f'cannot load: {e}' for e in errors]
    for lib, where in sorted(loaded.items()):
        if where == 'not' or not os.path.realpath(where).startswith(compat + os.sep):
            problems.append(f'{lib} resolves to {where}, not droce\'s {compat}')
    for line in out.splitlines():
        line = line.strip()
        m = LDD_UNDEF.match(line)
        if m and (m.group(1) in syms or (m.group(2) or '') in nodes):
            ver = f'@{m.group(2)}' if m.group(2) else ''
            problems.append(f'undefined symbol {m.group(1)}{ver} (needed by {m.group(3)})')
            continue
        m = LDD_NOVER.match(line)
        if m and m.group(2) in nodes:
            problems.append(f'version {m.group(2)} of {m.group(1)} not found '
                            f'(needed by {m.group(3)})')
    if is_so:
        r = subprocess.run([droce_run, sys.executable, '-c', DLOPEN, obj], capture_output=True,
                           text=True, env=env, timeout=60)
        if r.returncode != 0:
            problems.append('dlopen(RTLD_NOW): ' + (r.stdout + r.stderr).strip().splitlines()[-1])
    return problems


def pending_symbols(path):
    """name -> group for the entries of the exclusions file's pending-* groups."""
    pend = {}
    if not path:
        return pend
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] != 'group' and parts[2].startswith('pending-'):
                pend[parts[1].split('@')[0]] = parts[2]
    return pend


def main():
    args = sys.argv[1:]
    excl = None
    if '--exclusions' in args:
        i = args.index('--exclusions')
        excl = args[i + 1]
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    build = os.path.abspath(args[0])
    pkgs = args[1:] or PACKAGES
    pend = pending_symbols(excl)
    syms, nodes = rdma_names()
    points = []   # (ok, description, details)
    for pkg in pkgs:
        elves = package_elves(pkg)
        if elves is None:
            points.append((True, f'{pkg} # SKIP not installed', []))
            continue
        n = 0
        for obj in elves:
            is_so = '.so' in os.path.basename(obj)
            problems = check(build, obj, is_so, pkg == 'python3-pyverbs', syms, nodes)
            if problems is None:
                continue
            n += 1
            desc = f'{pkg}: {obj}'
            named = [p for p in problems if p.startswith(('undefined symbol ', 'dlopen('))]
            if problems and len(named) == len(problems) and all(
                    any(re.search(r'\b' + re.escape(name) + r'\b', p) for name in pend)
                    for p in named):
                groups = sorted({g for name, g in pend.items() for p in named
                                 if re.search(r'\b' + re.escape(name) + r'\b', p)})
                # named by the exclusions file as another branch's: a skip
                # with the details, until the lead removes the pending lines
                desc += ' # SKIP ' + ', '.join(groups) + ': provided by another branch'
                points.append((True, desc, problems))
                continue
            points.append((not problems, desc, problems))
        if n == 0:
            points.append((True, f'{pkg} # SKIP no object of it loads an RDMA library', []))
    print(f'1..{len(points)}')
    failed = 0
    for i, (ok, desc, details) in enumerate(points, 1):
        print(f'{"ok" if ok else "not ok"} {i} - {desc}')
        for d in details:
            print(f'#   {d}')
        failed += not ok
    pending = sum(1 for ok, desc, _ in points if ok and ': provided by another branch' in desc)
    print(f'# {len(points) - failed - pending} of {len(points)} load, {failed} fail, '
          f'{pending} wait for symbols another branch provides')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

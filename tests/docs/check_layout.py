#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the layout tables of docs/ARCHITECTURE.md and docs/developing.md
against the tree (suite `docs`).

ARCHITECTURE.md's table (`| folder | files and jobs |`): every source file
(.c, .h, .py, .ini, .map, .in) under a folder it has a row for is named in
that row (by its name, its path below the folder, or `name.c/.h` for a pair),
and every file name the row names exists under that folder (or, a
cross-reference, as a path from the root or under another row's folder).
docs/developing.md's table (`| folder | holds |`): every folder it names exists, and
its scripts/ row names every script in scripts/ (and names none that is not
there).  meson.build files are left out.  Prints each problem; exit 1 if any.

Usage: check_layout.py [REPO]   (default: the repository this file is in)
"""
import os
import re
import subprocess
import sys

SOURCE = re.compile(r'\.(c|h|py|ini|map|in)$')
NAMED = re.compile(r'`([^`]+)`')
FILEISH = re.compile(r'^[\w./-]+\.(c|h|py|ini|map|in|sh)(/\.h)?$')


def tracked(root):
    out = subprocess.run(['git', '-C', root, 'ls-files', '--cached', '--others',
                          '--exclude-standard'], check=True, capture_output=True,
                         text=True).stdout
    return [p for p in out.splitlines() if os.path.exists(os.path.join(root, p))]


def table(text, header):
    """{folder: row text} of the markdown table whose first line starts @header."""
    rows, on = {}, False
    for line in text.splitlines():
        if line.startswith(header):
            on = True
            continue
        if not on:
            continue
        if not line.startswith('|'):
            break
        cells = line.split('|')
        if len(cells) < 3 or set(cells[1].strip()) <= set('-'):
            continue
        m = NAMED.search(cells[1])
        if m:
            rows[m.group(1).rstrip('/') + '/'] = '|'.join(cells[2:])
    return rows


def names_in(row):
    """File names a row names: `a.c`, `perf/two.c`, `engine.c/.h` -> both."""
    out = set()
    for n in NAMED.findall(row):
        n = n.strip()
        if not FILEISH.match(n):
            continue
        if n.endswith('/.h'):
            out.add(n[:-3])
            out.add(n[:-5] + '.h')
        else:
            out.add(n)
    return out


def check_architecture(root, files, problems):
    path = os.path.join(root, 'docs', 'ARCHITECTURE.md')
    rows = table(open(path, encoding='utf-8').read(), '| folder | files and jobs |')
    if not rows:
        problems.append('docs/ARCHITECTURE.md: no layout table (| folder | files and jobs |)')
        return
    for folder, row in rows.items():
        named = names_in(row)
        under = [f[len(folder):] for f in files if f.startswith(folder)]
        if not under:
            problems.append(f'docs/ARCHITECTURE.md: row {folder}: no such folder in the tree')
            continue
        for rel in under:
            if not SOURCE.search(rel):
                continue
            base = os.path.basename(rel)
            if rel not in named and base not in named:
                problems.append(f'docs/ARCHITECTURE.md: {folder}{rel} is not in the {folder} row')
        for n in named:
            if any(rel == n or rel.endswith('/' + n) or os.path.basename(rel) == n
                   for rel in under):
                continue
            # a cross-reference: a path from the root, or a name in another row's folder
            if n in files or any(f.startswith(tuple(rows)) and os.path.basename(f) == n
                                 for f in files):
                continue
            problems.append(f'docs/ARCHITECTURE.md: row {folder} names `{n}`, which is '
                            f'not in the tree')


def check_developing(root, files, problems):
    rows = table(open(os.path.join(root, 'docs', 'developing.md'), encoding='utf-8').read(),
                 '| folder | holds |')
    if not rows:
        problems.append('docs/developing.md: no layout table (| folder | holds |)')
        return
    for folder in rows:
        if not any(f.startswith(folder) for f in files):
            problems.append(f'docs/developing.md: layout row {folder}: no such folder in the tree')
    row = rows.get('scripts/')
    if row is None:
        problems.append('docs/developing.md: the layout table has no scripts/ row')
        return
    named = {n.strip().rstrip('/') for n in NAMED.findall(row)}
    top = {f.split('/')[1] for f in files if f.startswith('scripts/') and f.count('/') >= 1}
    for s in sorted(top):
        if s not in named and s + '/' not in named:
            problems.append(f'docs/developing.md: scripts/{s} is not in the layout\'s scripts/ row')
    for n in sorted(named):
        if n not in top and re.match(r'^\w[\w.-]*$', n):
            problems.append(f'docs/developing.md: the scripts/ row names `{n}`, not in scripts/')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    files = [f for f in tracked(root) if os.path.basename(f) != 'meson.build']
    problems = []
    check_architecture(root, files, problems)
    check_developing(root, files, problems)
    for p in problems:
        print(p)
    print(f'{len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

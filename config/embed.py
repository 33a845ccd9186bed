#!/usr/bin/env python3
# Turns a text file into a C string constant: embed.py INPUT OUTPUT SYMBOL
import sys

src, dst, sym = sys.argv[1], sys.argv[2], sys.argv[3]
with open(src, 'rb') as f:
    data = f.read()
out = ['/* generated from %s by config/embed.py; do not edit */' % src.split('/')[-1],
       'const char %s[] =' % sym]
for line in data.decode('utf-8').splitlines(keepends=True):
    esc = ''.join(c if (32 <= ord(c) < 127 and c not in '"\\?') else
                  ('\\%03o' % ord(c) if ord(c) < 128 else c) for c in line)
    out.append('\t"%s"' % esc)
out.append('\t"";')
with open(dst, 'w') as f:
    f.write('\n'.join(out) + '\n')

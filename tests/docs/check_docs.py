#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The user documentation against the tree, the code and the programs
(suite `docs`).  One check per invocation:

  check_docs.py links  SRC        relative links and #anchors of README.md and
                                  docs/*.md resolve; docs/ paths the man pages
                                  name exist
  check_docs.py keys   SRC        every INI key of include/droce/config.h and
                                  of pmd_glue/config.c's key tables is in
                                  docs/configuration.md (as `key`)
  check_docs.py readme SRC        README.md has at most 200 lines
  check_docs.py man    SRC BUILD  every program Meson installs into bindir has
                                  man/NAME.1, installed by Meson, and its
                                  --help lists the same options as the page's
                                  OPTIONS section
  check_docs.py first  SRC BUILD SANITIZE
                                  the program of docs/getting-started.md
                                  (block marked <!-- docs-test: first.c -->)
                                  builds with pkg-config droce and runs on the
                                  embedded loopback config
  check_docs.py memif  SRC BUILD SANITIZE
                                  the guide's server.ini / client.ini carry
                                  Debian's ib_write_bw between two processes
                                  through droce-run (skipped, 77, in a
                                  sanitizer build or without perftest)

docs/notes/ (other branches' notes, folded in by the lead) is not checked.
Prints each problem; exit 1 if any.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
README_MAX = 200
LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')
FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
MARK = re.compile(r'^<!--\s*docs-test:\s*(\S+)\s*-->\s*$')


def guides(src):
    out = [os.path.join(src, 'README.md')]
    d = os.path.join(src, 'docs')
    out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith('.md'))
    return out


def prose_lines(text):
    """The lines outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(title):
    """GitHub's anchor for a heading."""
    t = re.sub(r'<[^>]+>', '', title)
    t = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', t)
    t = t.replace('`', '').strip().lower()
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        for line in prose_lines(open(path, encoding='utf-8').read()):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f'{s}-{n}')
        cache[path] = out
    return cache[path]


def check_links(src):
    problems = []
    for path in guides(src):
        rel = os.path.relpath(path, src)
        for line in prose_lines(open(path, encoding='utf-8').read()):
            for target in LINK.findall(line):
                if re.match(r'^[a-z]+:', target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                if not os.path.exists(dest):
                    problems.append(f'{rel}: link {target}: {file_part} does not exist')
                    continue
                if anchor and dest.endswith('.md') and anchor not in anchors(dest):
                    problems.append(f'{rel}: link {target}: no heading #{anchor} in '
                                    f'{os.path.relpath(dest, src)}')
    for page in sorted(os.listdir(os.path.join(src, 'man'))):
        if not re.search(r'\.\d$', page):
            continue
        text = open(os.path.join(src, 'man', page), encoding='utf-8').read()
        for doc in set(re.findall(r'docs/[\w.-]+\.md', text)):
            if not os.path.exists(os.path.join(src, doc)):
                problems.append(f'man/{page}: names {doc}, which does not exist')
    return problems


def config_keys(src):
    keys = set()
    text = open(os.path.join(src, 'pmd_glue', 'config.c'), encoding='utf-8').read()
    keys |= set(re.findall(r'\{\s*"([a-z][a-z0-9_]*)",\s*key_\w+', text))
    header = open(os.path.join(src, 'include', 'droce', 'config.h'), encoding='utf-8').read()
    m = re.search(r'/\*(.*?)\*/', header, re.S)
    comment = m.group(1) if m else ''
    keys |= set(re.findall(r'\b([a-z][a-z0-9_]*)\s*=\s', comment))
    sections = set(re.findall(r'\[(eal|engines|mempool|portN)\]', comment))
    return keys, sections


def check_keys(src):
    problems = []
    keys, sections = config_keys(src)
    if len(keys) < 30:
        problems.append(f'found only {len(keys)} keys in config.h / config.c: the parser '
                        'here no longer matches them')
    doc = open(os.path.join(src, 'docs', 'configuration.md'), encoding='utf-8').read()
    for k in sorted(keys):
        if f'`{k}`' not in doc:
            problems.append(f'docs/configuration.md: INI key `{k}` is not documented')
    for s in sorted(sections):
        if f'`[{s}]`' not in doc:
            problems.append(f'docs/configuration.md: section `[{s}]` is not documented')
    return problems


def check_readme(src):
    n = len(open(os.path.join(src, 'README.md'), encoding='utf-8').read().splitlines())
    return [f'README.md: {n} lines, more than {README_MAX}'] if n > README_MAX else []


def opt_tokens(spec):
    return {t for t in re.split(r'[\s,=\[\]"]+', spec) if t.startswith('-')}


def help_options(text):
    """Options of a --help text: the tokens of each option line's spec part."""
    opts = set()
    for line in text.splitlines():
        m = re.match(r'^\s+(-\S.*?)(?:\s{2,}|$)', line)
        if m:
            opts |= opt_tokens(m.group(1))
    return opts


def man_options(text):
    """Options of a man page: the tag line after each .TP in OPTIONS."""
    opts, in_opts, tag_next = set(), False, False
    for line in text.splitlines():
        if line.startswith('.SH'):
            in_opts = line.split(None, 1)[1:] == ['OPTIONS']
            continue
        if not in_opts:
            continue
        if line.startswith('.TP'):
            tag_next = True
            continue
        if tag_next:
            tag_next = False
            plain = re.sub(r'\\f[BIRP]', '', line).replace('\\-', '-')
            plain = re.sub(r'^\.[A-Z]+\s*', '', plain)
            opts |= opt_tokens(plain)
    return opts


def installed(build):
    out = subprocess.run(['meson', 'introspect', build, '--installed'], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def check_man(src, build):
    problems = []
    inst = installed(build)
    programs = {os.path.basename(dst): srcf for srcf, dst in inst.items()
                if os.path.basename(os.path.dirname(dst)) == 'bin'}
    pages = {os.path.basename(dst) for dst in inst.values()
             if os.path.basename(os.path.dirname(dst)) == 'man1'}
    if not programs:
        problems.append('meson introspect lists no program installed into bindir')
    for name, binary in sorted(programs.items()):
        page = os.path.join(src, 'man', name + '.1')
        if not os.path.exists(page):
            problems.append(f'{name}: installed, but man/{name}.1 does not exist')
            continue
        if name + '.1' not in pages:
            problems.append(f'{name}: man/{name}.1 is not installed (man/meson.build)')
        first = open(binary, 'rb').read(2)
        cmd = ['sh', binary] if first == b'#!' and not os.access(binary, os.X_OK) else [binary]
        r = subprocess.run(cmd + ['--help'], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            problems.append(f'{name} --help: exit status {r.returncode}')
            continue
        h = help_options(r.stdout)
        m = man_options(open(page, encoding='utf-8').read())
        if not h:
            problems.append(f'{name} --help lists no options')
        for o in sorted(h - m):
            problems.append(f'{name}: {o} is in --help but not in man/{name}.1 OPTIONS')
        for o in sorted(m - h):
            problems.append(f'{name}: {o} is in man/{name}.1 OPTIONS but not in --help')
        print(f'{name}: {len(h)} options in --help, {len(m)} in the page')
    return problems


def blocks(src):
    """{name: text} of the code blocks of getting-started.md marked docs-test."""
    out, want, body, fenced = {}, None, [], False
    path = os.path.join(src, 'docs', 'getting-started.md')
    lines = open(path, encoding='utf-8').read().splitlines()
    for line in lines:
        if not fenced:
            m = MARK.match(line)
            if m:
                want = m.group(1)
                continue
            if FENCE.match(line):
                fenced, body = True, []
                continue
            if line.strip():
                want = None
        else:
            if FENCE.match(line):
                fenced = False
                if want:
                    out[want] = '\n'.join(body) + '\n'
                want = None
                continue
            body.append(line)
    return out


def env_for(build, sanitize):
    env = dict(os.environ)
    env.pop('DROCE_CONFIG', None)
    env['PKG_CONFIG_PATH'] = os.path.join(build, 'meson-uninstalled')
    env['LD_LIBRARY_PATH'] = build + (':' + env['LD_LIBRARY_PATH']
                                      if env.get('LD_LIBRARY_PATH') else '')
    if sanitize != 'none':
        env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':detect_leaks=0'
    return env


def check_first(src, build, sanitize):
    problems = []
    code = blocks(src).get('first.c')
    if code is None:
        return ['docs/getting-started.md: no block marked <!-- docs-test: first.c -->']
    guide = open(os.path.join(src, 'docs', 'getting-started.md'), encoding='utf-8').read()
    cmd_text = 'cc first.c $(pkg-config --cflags --libs droce) -o first'
    if cmd_text not in guide:
        problems.append(f'docs/getting-started.md: the build command "{cmd_text}" is gone')
    env = env_for(build, sanitize)
    with tempfile.TemporaryDirectory(prefix='droce-docs-') as tmp:
        open(os.path.join(tmp, 'first.c'), 'w').write(code)
        flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'droce'], env=env,
                               check=True, capture_output=True, text=True).stdout.split()
        extra = [f'-fsanitize={sanitize}'] if sanitize != 'none' else []
        r = subprocess.run(['cc', '-Wall', '-Wextra', '-Werror', '-o', 'first', 'first.c']
                           + flags + extra, cwd=tmp, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            return problems + ['first.c does not build:\n' + r.stderr]
        r = subprocess.run(['./first'], cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=120)
        print(r.stdout, end='')
        if r.returncode != 0:
            problems.append(f'first exited {r.returncode}:\n{r.stderr}')
        elif 'first: droce1\'s memory now reads "hello from droce0"' not in r.stdout:
            problems.append('first did not print the line the guide shows')
        if 'first: droce1\'s memory now reads "hello from droce0"' not in guide:
            problems.append('docs/getting-started.md no longer shows first\'s output line')
    return problems


def free_tcp_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def tcp_listening(port):
    """Something listens on TCP @port (without connecting: perftest's server
    would take a probe for its client)."""
    r = subprocess.run(['ss', '-Htln', f'sport = :{port}'], capture_output=True, text=True)
    return bool(r.stdout.strip())


def run_pair(run, args, tmp, env, sock, port):
    """One server and client of the guide's two commands: (client, server rc, server log)."""
    if os.path.exists(sock):
        os.unlink(sock)
    slog_path = os.path.join(tmp, 'server.log')
    with open(slog_path, 'w') as slog:
        srv = subprocess.Popen(['timeout', '90', run, '--config', 'server.ini'] + args,
                               cwd=tmp, env=env, stdout=slog, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 20
            while not os.path.exists(sock) and srv.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            cmd = ['timeout', '90', run, '--config', 'client.ini'] + args + ['127.0.0.1']
            cli = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
            if cli.returncode != 0 and "Couldn't connect" in cli.stdout + cli.stderr:
                deadline = time.time() + 20
                while srv.poll() is None and not tcp_listening(port) and \
                        time.time() < deadline:
                    time.sleep(0.1)
                cli = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
            srv_rc = srv.wait(timeout=100)
        finally:
            if srv.poll() is None:
                srv.send_signal(signal.SIGTERM)
                srv.wait(timeout=10)
    return cli, srv_rc, open(slog_path).read()


def check_memif(src, build, sanitize):
    tool = shutil.which('ib_write_bw')
    if sanitize != 'none' or tool is None:
        print('skipped: ' + ('sanitizer build (Debian\'s programs cannot load an ASan '
                             'libibverbs)' if sanitize != 'none' else 'no ib_write_bw'))
        return None
    b = blocks(src)
    problems = [f'docs/getting-started.md: no block marked <!-- docs-test: {n} -->'
                for n in ('server.ini', 'client.ini') if n not in b]
    if problems:
        return problems
    guide = open(os.path.join(src, 'docs', 'getting-started.md'), encoding='utf-8').read()
    for side, tail in (('server', ''), ('client', ' 127.0.0.1')):
        line = f'build/droce-run --config {side}.ini ib_write_bw -d droce0 -x 0 -F'
        if line + tail not in guide:
            problems.append(f'docs/getting-started.md: the command "{line}{tail}" is gone')
    run = os.path.join(build, 'droce-run')
    port = str(free_tcp_port())
    args = ['ib_write_bw', '-d', 'droce0', '-x', '0', '-F', '-p', port, '-n', '500']
    with tempfile.TemporaryDirectory(prefix='droce-docs-') as tmp:
        sock = os.path.join(tmp, 'memif.sock')
        for n in ('server.ini', 'client.ini'):
            text = b[n].replace('/tmp/droce-memif.sock', sock)
            if sock not in text:
                problems.append(f'{n}: no socket = /tmp/droce-memif.sock to redirect')
            open(os.path.join(tmp, n), 'w').write(text)
        env = dict(os.environ)
        env.pop('DROCE_CONFIG', None)
        # As the guide says: the server first, the client as soon as the
        # server's memif socket is there (the server's droce waits 3 s for its
        # link, and perftest gives up on a port that is down), and the client
        # again when it came before the server listened on TCP.  On a loaded
        # machine a pair may still miss those 3 s: up to 3 pairs.
        for attempt in range(3):
            cli, srv_rc, log = run_pair(run, args, tmp, env, sock, port)
            if cli.returncode == 0 and srv_rc == 0:
                break
            print(f'attempt {attempt + 1}: client exit {cli.returncode}, server exit {srv_rc}')
            print(cli.stdout + cli.stderr + log)
        out = cli.stdout
        print(out)
        row = None
        lines = out.splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith('#bytes') and i + 1 < len(lines):
                row = lines[i + 1].split()
                break
        if cli.returncode != 0 or srv_rc != 0:
            problems.append(f'ib_write_bw: client exit {cli.returncode}, server exit '
                            f'{srv_rc} in 3 attempts')
        elif not row or len(row) < 5 or float(row[3]) <= 0:
            problems.append(f'ib_write_bw: no result row with a BW average above 0: {row}')
        else:
            print(f'ib_write_bw over the guide\'s memif configs: {row[3]} MB/s average')
    return problems


def main():
    what, src = sys.argv[1], os.path.abspath(sys.argv[2])
    rest = sys.argv[3:]
    checks = {
        'links': lambda: check_links(src),
        'keys': lambda: check_keys(src),
        'readme': lambda: check_readme(src),
        'man': lambda: check_man(src, os.path.abspath(rest[0])),
        'first': lambda: check_first(src, os.path.abspath(rest[0]), rest[1]),
        'memif': lambda: check_memif(src, os.path.abspath(rest[0]), rest[1]),
    }
    problems = checks[what]()
    if problems is None:
        return SKIP
    for p in problems:
        print(p)
    print(f'{what}: {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

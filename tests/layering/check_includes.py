#!/usr/bin/env python3
"""Checks every quoted #include of the C++ sources against the dependency table in
docs/ARCHITECTURE.md (between <!-- layering:begin --> and <!-- layering:end -->), so
the table and the code cannot drift apart.

A row of the table is `| `FOLDER/` | `LIBRARY` | `DEP/`, `DEP/` ... |` (or — for none).
A file belongs to the longest folder of the table that prefixes its path; it may
include headers of its own folder and of the folders its row lists. Every folder that
holds C++ sources must be in the table. Exit 0 when all is well, 1 with one line per
offending include otherwise. Python 3 standard library only.
"""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
doc = open(os.path.join(root, 'docs', 'ARCHITECTURE.md'), encoding='utf-8').read()
m = re.search(r'<!-- layering:begin -->(.*?)<!-- layering:end -->', doc, re.S)
if not m:
    sys.exit('docs/ARCHITECTURE.md: no <!-- layering:begin --> ... <!-- layering:end --> table')

allowed = {}
for line in m.group(1).splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) < 3 or not cells[0].startswith('`'):
        continue
    folder = cells[0].strip('`')
    deps = re.findall(r'`([^`]+/)`', cells[2])
    allowed[folder] = set(deps)
if not allowed:
    sys.exit('docs/ARCHITECTURE.md: the layering table has no rows')
for folder, deps in allowed.items():
    for d in deps:
        if d not in allowed:
            sys.exit(f'docs/ARCHITECTURE.md: {folder} may include {d}, which is not a row of the table')


def owner(path):
    best = None
    for folder in allowed:
        if path.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
problems = []
unlisted = set()
for dirpath, dirnames, filenames in os.walk(root):
    rel_dir = os.path.relpath(dirpath, root).replace(os.sep, '/')
    dirnames[:] = [d for d in dirnames if not d.startswith('.') and not (rel_dir == '.' and d.startswith('build'))]
    for name in sorted(filenames):
        if not name.endswith(('.cpp', '.hpp')):
            continue
        rel = (rel_dir + '/' + name) if rel_dir != '.' else name
        folder = owner(rel)
        if folder is None:
            unlisted.add(rel_dir + '/')
            continue
        text = open(os.path.join(root, rel), encoding='utf-8').read()
        for inc in include.findall(text):
            if not os.path.exists(os.path.join(root, inc)):
                continue  # a generated header (protoc) or one beside the file: not a layer
            target = owner(inc)
            if target is None:
                problems.append(f'{rel}: includes {inc}, which is in no folder of the table')
            elif target != folder and target not in allowed[folder]:
                problems.append(f'{rel}: {folder} may not include {inc} ({target}); the table allows: '
                                f'{", ".join(sorted(allowed[folder])) or "nothing"}')
for d in sorted(unlisted):
    problems.append(f'{d}: holds C++ sources but is not a row of the layering table in docs/ARCHITECTURE.md')
for p in problems:
    print(p)
print(f'include_layering: {len(allowed)} folders, {len(problems)} problem{"s" if len(problems) != 1 else ""}')
sys.exit(1 if problems else 0)

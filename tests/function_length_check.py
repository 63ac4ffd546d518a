#!/usr/bin/env python3
"""Fails when a function in agent/, lib/, tools/ or bench/ is longer than the limit.

Usage: function_length_check.py [--limit N] [--root DIR] [FILE...]

A function is counted from the first line of its signature to its closing
brace, comments and blank lines included. Namespaces, extern "C" blocks and
class/struct/union/enum bodies are containers, not functions: the member
functions defined inside them are measured one by one. Lambdas count toward
the function that holds them. The parser strips comments and string
literals and then matches braces, which is enough for this codebase's
clang-format style (a function's body opens on its signature's last line).
"""
import argparse
import glob
import os
import re
import sys

CONTAINER = re.compile(r'\b(namespace|class|struct|union|enum)\b|extern\s+""')


def strip(src):
    keep_lines = lambda m: '\n' * m.group(0).count('\n')
    src = re.sub(r'R"([^(]*)\((.*?)\)\1"', lambda m: '""' + keep_lines(m), src, flags=re.S)
    src = re.sub(r'/\*.*?\*/', keep_lines, src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    src = re.sub(r"'(\\.|[^'\\\n])*'", "''", src)
    return src


def functions(path):
    """Yields (first line, last line, first line's text) per function."""
    original = open(path, encoding='utf-8').read().split('\n')
    lines = strip('\n'.join(original)).split('\n')
    stack = []  # 'container', 'block' or ('function', start)
    for i, line in enumerate(lines):
        for col, ch in enumerate(line):
            if ch == '{':
                inside_function = any(isinstance(k, tuple) for k in stack)
                if inside_function:
                    stack.append('block')
                    continue
                # The statement this brace opens: back to the previous line
                # ending a statement or a block.
                j = i
                while j > 0 and lines[j - 1].strip() and not lines[j - 1].rstrip().endswith((';', '}', '{', ':')):
                    j -= 1
                head = ' '.join(l.strip() for l in lines[j:i]) + ' ' + line[:col]
                head = re.sub(r'\btemplate\s*<[^>]*>', '', head)
                if CONTAINER.search(head) and '(' not in head.split('{')[0].split('=')[0]:
                    stack.append('container')
                elif '(' in head or re.search(r'\)\s*(const|override|noexcept|final|\s)*$', head):
                    stack.append(('function', j))
                else:
                    stack.append('block')  # an initializer list at namespace scope
            elif ch == '}':
                if not stack:
                    continue
                kind = stack.pop()
                if isinstance(kind, tuple):
                    yield kind[1] + 1, i + 1, original[kind[1]].strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--limit', type=int, default=80)
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    ap.add_argument('files', nargs='*')
    args = ap.parse_args()
    files = args.files or sorted(f for d in ('agent', 'lib', 'tools', 'bench') for ext in ('cc', 'h')
                                 for f in glob.glob(os.path.join(args.root, d, '**', f'*.{ext}'), recursive=True))
    too_long = []
    for f in files:
        for first, last, text in functions(f):
            n = last - first + 1
            if n > args.limit:
                too_long.append((n, os.path.relpath(f, args.root), first, text))
    for n, f, first, text in sorted(too_long, reverse=True):
        print(f'{f}:{first}: {n} lines (limit {args.limit}): {text[:100]}')
    if too_long:
        print(f'{len(too_long)} function(s) longer than {args.limit} lines', file=sys.stderr)
        return 1
    print(f'every function in {len(files)} files is at most {args.limit} lines')
    return 0


if __name__ == '__main__':
    sys.exit(main())

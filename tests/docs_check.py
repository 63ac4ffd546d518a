#!/usr/bin/env python3
"""The reference docs against what the tree defines, both ways.

  docs/configuration.md  every YAML field path of roced.v1.NodeConfig
                         (proto/roced/v1/config.proto, leaves only)
  docs/api.md            every rocectl command (tools/rocectl/command_table.cc)
                         and every RPC of the services in proto/roced/v1/
  docs/metrics.md        every /metrics family: those of the golden outputs
                         (tests/fixtures/expected_metrics_*.txt, with their
                         type) and the "roced_..." names the agent's sources
                         spell out whole (the lab-only families)

Each doc marks its checked table with a line `<!-- docs-check:KIND -->`; the
table's rows below it have the entry in backticks in their first cell (and,
for metrics, the type in the second). An entry missing from a doc, or one a
doc names that the tree does not define, is reported and the exit is 1.

Usage: docs_check.py SOURCE_DIR
"""
import os
import re
import sys

SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_messages(text):
    """{message: [(field, type, repeated)]}, enums as {name}; nested blocks flattened."""
    text = strip_comments(text)
    messages, enums = {}, set()
    stack = []  # (kind, name)
    for token in re.finditer(r"\b(message|enum|oneof)\s+(\w+)\s*\{|\{|\}|([^;{}]+);", text):
        if token.group(1):
            stack.append((token.group(1), token.group(2)))
            if token.group(1) == "message":
                messages[token.group(2)] = []
            elif token.group(1) == "enum":
                enums.add(token.group(2))
        elif token.group(0) == "{":
            stack.append(("block", ""))
        elif token.group(0) == "}":
            if stack:
                stack.pop()
        elif token.group(3):
            owner = next((n for k, n in reversed(stack) if k == "message"), None)
            if owner is None or (stack and stack[-1][0] == "enum"):
                continue
            m = re.match(r"\s*(repeated\s+|optional\s+)?(map\s*<[^>]+>|[\w.]+)\s+(\w+)\s*=\s*\d+", token.group(3))
            if m:
                messages[owner].append((m.group(3), m.group(2), (m.group(1) or "").strip() == "repeated"))
    return messages, enums


def config_fields(src):
    with open(os.path.join(src, "proto/roced/v1/config.proto")) as f:
        messages, _ = parse_messages(f.read())
    out = []

    def walk(message, prefix):
        for name, ftype, repeated in messages[message]:
            # The YAML spells this one key as Kubernetes does (lib/model/config_yaml.cc).
            path = prefix + ("apiVersion" if name == "api_version" else name)
            if ftype in messages:
                walk(ftype, path + ("[]." if repeated else "."))
            else:
                out.append(path)

    walk("NodeConfig", "")
    return out


def commands(src):
    with open(os.path.join(src, "tools/rocectl/command_table.cc")) as f:
        text = f.read()
    table = text[text.index("kCommands = {"):]
    table = table[:table.index("\n  };")]
    return ["rocectl " + n for n in re.findall(r'^\s*\{"([a-z][a-z-]*)",', table, flags=re.M)]


def rpcs(src):
    out = []
    folder = os.path.join(src, "proto/roced/v1")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".proto"):
            continue
        with open(os.path.join(folder, name)) as f:
            text = strip_comments(f.read())
        for service in re.finditer(r"\bservice\s+(\w+)\s*\{(.*?)\n\}", text, flags=re.S):
            for rpc in re.findall(r"\brpc\s+(\w+)\s*\(", service.group(2)):
                out.append("%s.%s" % (service.group(1), rpc))
    return out


def metric_families(src):
    """{family: type or None}: typed from the golden outputs, untyped from the sources."""
    families = {}
    fixtures = os.path.join(src, "tests/fixtures")
    for name in sorted(os.listdir(fixtures)):
        if name.startswith("expected_metrics_") and name.endswith(".txt"):
            with open(os.path.join(fixtures, name)) as f:
                for m in re.finditer(r"^# TYPE (\w+) (\w+)$", f.read(), flags=re.M):
                    families[m.group(1)] = m.group(2)
    for top in ("lib", "agent"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if name.endswith((".cc", ".h")):
                    with open(os.path.join(root, name), errors="replace") as f:
                        for literal in re.findall(r'"(roced_[a-z0-9_]+)"', f.read()):
                            families.setdefault(literal, None)
    return families


def heading_anchors(path):
    """The anchors GitHub gives the headings of a Markdown file: lowercased,
    everything but letters, digits, spaces, '-' and '_' dropped, spaces to
    '-'; a repeated one gets -1, -2, ... Fenced code is not searched."""
    out, fenced = set(), False
    with open(path) as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            anchor, n = base, 0
            while anchor in out:
                n += 1
                anchor = "%s-%d" % (base, n)
            out.add(anchor)
    return out


def doc_rows(path, kind):
    """[(line number, first cell's backticked entry, second cell)] of the table under the marker."""
    rows = []
    with open(path) as f:
        lines = f.read().split("\n")
    marker = "<!-- docs-check:%s -->" % kind
    starts = [i for i, line in enumerate(lines) if line.strip() == marker]
    if not starts:
        return None
    for start in starts:
        i = start + 1
        while i < len(lines) and not lines[i].startswith("|"):
            i += 1
        while i < len(lines) and lines[i].startswith("|"):
            cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            m = re.fullmatch(r"`([^`]+)`", cells[0])
            if m:
                rows.append((i + 1, m.group(1), cells[1].strip("`") if len(cells) > 1 else ""))
            i += 1
    return rows


def compare(doc, kind, defined, problems):
    rows = doc_rows(doc, kind)
    rel = os.path.relpath(doc)
    if rows is None:
        problems.append("%s: no <!-- docs-check:%s --> table" % (rel, kind))
        return []
    documented = {}
    for line, entry, _ in rows:
        if entry in documented:
            problems.append("%s:%d: %s listed twice" % (rel, line, entry))
        documented[entry] = line
    for entry in defined:
        if entry not in documented:
            problems.append("%s: missing %s entry: %s" % (rel, kind, entry))
    for entry, line in documented.items():
        if entry not in defined:
            problems.append("%s:%d: %s entry %s is not defined by the tree" % (rel, line, kind, entry))
    return rows


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split("\n")[-1], file=sys.stderr)
        return 2
    src = argv[1]
    docs = os.path.join(src, "docs")
    problems = []
    compare(os.path.join(docs, "configuration.md"), "fields", config_fields(src), problems)
    compare(os.path.join(docs, "api.md"), "commands", commands(src), problems)
    compare(os.path.join(docs, "api.md"), "rpcs", rpcs(src), problems)
    families = metric_families(src)
    rows = compare(os.path.join(docs, "metrics.md"), "metrics", families, problems)
    for line, entry, mtype in rows:
        want = families.get(entry)
        if want is not None and mtype != want:
            problems.append("docs/metrics.md:%d: %s is a %s in /metrics, the doc says %s" % (line, entry, want, mtype))
    for p in problems:
        print("docs_check: " + p)
    if problems:
        return 1
    print("docs_check: docs match the tree (%d fields, %d commands, %d RPCs, %d metric families)" %
          (len(config_fields(src)), len(commands(src)), len(rpcs(src)), len(families)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

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

References, in README.md, docs/*.md and the READMEs under tests/ (and, for
file and section names, in the comments of deploy/, systemd/, packaging/,
scripts/ and the CMakeLists.txt files):
  links      a Markdown link's file exists, and its #anchor is a heading there
  paths      a backticked repo path (`lib/hal/...`, `deploy/...`) is a file, a
             directory, or a file's name without its extension
  files      a FILE.md named in a comment exists (beside the file, at the top,
             or in docs/)
  sections   `FILE.md, "Section"` and `"Section" in FILE.md` name the start of
             a heading of that file
  caps       every capability systemd/roced.service grants
             (CapabilityBoundingSet=) is named in docs/operations.md's
             "systemd and Kubernetes"
  flags      a --flag on a roced or rocectl command line (a code block line or
             a backticked command) is one the binary registers
             (agent/flags.cc, tools/rocectl/), and each name after
             `--checks` is a diagnose check (lib/diagnose/checks/)

Usage: docs_check.py SOURCE_DIR
"""
import glob
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


REPO_TOPS = ("proto/", "lib/", "agent/", "tools/", "deploy/", "systemd/", "bench/", "tests/", "scripts/",
             "docs/", "third_party/", "packaging/")
# Named in the docs but outside this repository.
OUTSIDE = {"shared/docs/design.md": "the template the design started from"}


def markdown_docs(src):
    out = [os.path.join(src, "README.md")]
    out += sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    out += sorted(glob.glob(os.path.join(src, "tests", "*", "README.md")))
    return [p for p in out if os.path.exists(p)]


def comment_files(src):
    """Files whose comments name docs: deploy/, systemd/, packaging/, scripts/, CMakeLists.txt."""
    out = []
    for top in ("deploy", "systemd", "packaging", "scripts"):
        for root, _, files in os.walk(os.path.join(src, top)):
            out += [os.path.join(root, f) for f in files]
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d not in ("fixtures", "corpus")]
        out += [os.path.join(root, f) for f in files if f == "CMakeLists.txt"]
    return sorted(set(out))


def resolve(src, ref, from_file):
    """The file a reference names: beside the referring file, at the top, or in docs/."""
    for base in (os.path.dirname(from_file), src, os.path.join(src, "docs")):
        path = os.path.normpath(os.path.join(base, ref))
        if os.path.exists(path):
            return path
    return None


def unfenced(text):
    """The text with fenced code blocks blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def check_sections(src, path, text, problems):
    rel = os.path.relpath(path, src)
    pattern = (r'([\w./-]+\.md)\)?,? "([^"\n]+)"'
               r'|"([^"\n]+)" in \[?([\w./-]+\.md)')
    for m in re.finditer(pattern, text):
        ref, section = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        target = resolve(src, ref, path)
        if target is None:
            continue  # reported as a missing file
        with open(target) as f:
            heads = [h.strip() for h in re.findall(r"^#{1,6}\s+(.*)$", unfenced(f.read()), flags=re.M)]
        if not any(h.startswith(section) for h in heads):
            problems.append('%s:%d: %s has no section "%s"' % (rel, line_of(text, m.start()), ref, section))


def check_references(src, problems):
    for path in markdown_docs(src):
        rel = os.path.relpath(path, src)
        with open(path) as f:
            full = f.read()
        text = unfenced(full)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                problems.append("%s:%d: link to %s: no such file" % (rel, line_of(text, m.start()), target))
            elif anchor and dest.endswith(".md") and anchor not in heading_anchors(dest):
                problems.append("%s:%d: link to %s: no such heading" % (rel, line_of(text, m.start()), target))
        for m in re.finditer(r"`([^`\s]+)`", text):
            ref = re.sub(r":\d+(-\d+)?$", "", m.group(1)).rstrip(".,;")
            if not ref.startswith(REPO_TOPS) or re.search(r"[<>*{}$|]|\.\.\.", ref):
                continue
            if ref.startswith("lib/roced/"):
                continue  # the install's private library directory, not the source tree
            stem = os.path.join(src, ref.rstrip("/"))
            if not (os.path.exists(stem) or glob.glob(stem + ".*")):
                problems.append("%s:%d: `%s`: no such file or directory" % (rel, line_of(text, m.start()), ref))
        check_files_and_sections(src, path, full, problems)
    for path in comment_files(src):
        with open(path, errors="replace") as f:
            check_files_and_sections(src, path, f.read(), problems)


def check_files_and_sections(src, path, text, problems):
    rel = os.path.relpath(path, src)
    for m in re.finditer(r"(?<![\w/.$:-])((?:[\w.-]+/)*[\w-]+\.md)\b", text):
        ref = m.group(1)
        if ref in OUTSIDE or re.match(r"[A-Z]+/", ref):
            continue
        if resolve(src, ref, path) is None:
            problems.append("%s:%d: %s: no such file" % (rel, line_of(text, m.start()), ref))
    check_sections(src, path, text, problems)


def registered_flags(src, files):
    names = set()
    for pattern in files:
        for path in glob.glob(os.path.join(src, pattern)):
            with open(path) as f:
                names.update(re.findall(r'\bAdd[A-Z]\w*\(\s*"([a-z][a-z0-9.-]*)"', f.read()))
    return names


def diagnose_checks(src):
    """The check names, one check a file under lib/diagnose/checks/."""
    names = set()
    for path in glob.glob(os.path.join(src, "lib/diagnose/checks/*.cc")):
        with open(path) as f:
            names.update(re.findall(r'\{\{"([a-z_]+)", "', f.read()))
    return names


def command_lines(text):
    """(line number, binary, its arguments) of roced/rocectl commands: fenced
    code lines (continuations joined) and backticked spans."""
    out, fenced, pending, start = [], False, "", 0
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            if not pending:
                start = number
            pending += " " + line.rstrip("\\")
            if line.endswith("\\"):
                continue
            spans, pending = [pending], ""
        else:
            start = number
            spans = re.findall(r"`([^`]+)`", line)
        for span in spans:
            for m in re.finditer(r"(?:^|[\s/$(])(roced|rocectl)\s+([^|;&#>]*)", span):
                out.append((start, m.group(1), m.group(2)))
    return out


def check_flags(src, problems):
    """The number of flags checked."""
    checked = 0
    known = {"roced": registered_flags(src, ["agent/flags.cc"]),
             "rocectl": registered_flags(src, ["tools/rocectl/*.cc"])}
    checks = diagnose_checks(src)
    for path in markdown_docs(src):
        rel = os.path.relpath(path, src)
        with open(path) as f:
            text = f.read()
        for number, binary, args in command_lines(text):
            for m in re.finditer(r"(?<![\w-])--([a-z][a-z0-9.-]*[a-z0-9])(?![\w*-])", args):
                checked += 1
                if m.group(1) not in known[binary]:
                    problems.append("%s:%d: %s has no flag --%s" % (rel, number, binary, m.group(1)))
            for m in re.finditer(r"--checks[ =]([a-z_,]+)", args):
                for name in m.group(1).split(","):
                    if name not in checks:
                        problems.append("%s:%d: diagnose has no check %s" % (rel, number, name))
    return checked


def check_capabilities(src, problems):
    with open(os.path.join(src, "systemd/roced.service")) as f:
        unit = f.read()
    granted = set()
    for line in re.findall(r"^CapabilityBoundingSet=(.*)$", unit, flags=re.M):
        granted.update(line.split())
    with open(os.path.join(src, "docs/operations.md")) as f:
        text = f.read()
    m = re.search(r"^## systemd and Kubernetes\n(.*?)(?=^## )", text, flags=re.M | re.S)
    section = m.group(1) if m else ""
    for cap in sorted(granted):
        if not re.search(r"\b%s\b" % cap, section):
            problems.append('docs/operations.md: "systemd and Kubernetes" does not name %s, which the unit grants' % cap)


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
    check_references(src, problems)
    check_capabilities(src, problems)
    flags = check_flags(src, problems)
    for p in problems:
        print("docs_check: " + p)
    if problems:
        return 1
    print("docs_check: docs match the tree (%d fields, %d commands, %d RPCs, %d metric families; "
          "links, paths, sections and %d roced/rocectl flags)" %
          (len(config_fields(src)), len(commands(src)), len(rpcs(src)), len(families), flags))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

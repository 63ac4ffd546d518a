#!/usr/bin/env python3
"""The layer graph as the build declares it, and what the compiler cannot see.

The graph lives in the CMake files only: lib/CMakeLists.txt's
roced_module(NAME ... DEPS ...), agent/CMakeLists.txt's
roced_agent_layer(NAME ... DEPS ...) and the target_link_libraries(... PUBLIC
...) of roced_agent_state and rocectl_lib. Each layer's sources see only the
include roots of the targets it links (roced_include_root), so the build
itself refuses an #include of an undeclared layer; tests/layering/ proves it.

This script reads that graph and fails when
  - a file of a layer includes a layer it does not link: the compiler sees a
    header only where a source of its layer includes it, so the headers are
    read here too;
  - an #include in agent/, lib/, tools/, tests/ or bench/ climbs with "..",
    an absolute path or include_roots (the ways past the include roots: a
    quoted include is first looked up beside the including file);
  - a CMakeLists.txt adds an include directory into the source tree (lib/,
    agent/, tools/ or the root), which would open every layer;
  - a metric family is built outside lib/metrics (every family is defined
    and registered there, one owner per source; the runtimes set values);
  - docs/design.md's layer table (between the "layers:" markers) is not
    the graph as the CMake files declare it. --write rewrites it.

Usage: layering_check.py SOURCE_DIR [--write]   (exit 1 listing each problem)
"""
import os
import re
import sys

BEGIN = "<!-- layers: written by tests/layering_check.py --write from the CMake files -->"
END = "<!-- end of layers -->"
CHECKED_TREES = ("agent", "lib", "tools", "tests", "bench")
CLIMB = re.compile(r'^\s*#\s*include\s*[<"]((?:[^>"]*(?:\.\.|include_roots)[^>"]*)|/[^>"]*)[>"]')
FAMILY = re.compile(r"prometheus::Build(Counter|Gauge|Histogram|Summary|Info)\(")
FAMILY_TREES = ("agent", "lib", "tools")


def layer_name(target):
    """A CMake target as the table names it, or None for what is not ours."""
    if "${" in target:
        return None
    if target == "roced_lib":
        return "every lib/ module"
    if target == "roced_defaults":
        return "model/defaults.h"
    if target == "roced_agent_lib":
        return "agent"
    if target == "rocectl_lib":
        return "tools/rocectl"
    if target.startswith("roced_agent_"):
        return "agent/" + target[len("roced_agent_"):]
    if target.startswith("roced_") and not target.startswith(("roced_proto", "roced_civetweb")):
        return target[len("roced_"):]
    return None


def calls(text, function):
    """The argument words of every call of `function` in a CMake file."""
    for m in re.finditer(r"^\s*" + re.escape(function) + r"\(([^)]*)\)", text, re.M | re.S):
        words = []
        for line in m.group(1).splitlines():
            words += line.split("#", 1)[0].split()
        yield words


def cmake_texts(root):
    texts = {}
    for name in ("lib", "agent", os.path.join("tools", "rocectl")):
        with open(os.path.join(root, name, "CMakeLists.txt"), encoding="utf-8") as f:
            texts[name] = f.read()
    return texts


def graph(root):
    """{layer: [layers it links]} in the order the CMake files declare them:
    the helpers' DEPS and every target_link_libraries of ours, whatever its
    visibility."""
    out = {}
    texts = cmake_texts(root)
    for name, function, prefix in (("lib", "roced_module", "roced_"), ("agent", "roced_agent_layer", "roced_agent_")):
        for words in calls(texts[name], function):
            if not words or words[0] == "name":  # the function's own definition
                continue
            deps = words[words.index("DEPS") + 1:] if "DEPS" in words else []
            out[layer_name(prefix + words[0])] = [d for d in map(layer_name, deps) if d]
    for text in texts.values():
        for words in calls(text, "target_link_libraries"):
            layer = layer_name(words[0]) if words else None
            if layer in (None, "every lib/ module"):  # not ours, or the umbrella
                continue
            deps = out.setdefault(layer, [])
            deps += [d for d in map(layer_name, words[1:]) if d and d not in deps]
    return out


def allowed(g, layer):
    """The layers `layer` may include: itself and everything below it."""
    lib_modules = [k for k in g if "/" not in k and k != "agent"]
    seen, todo = {layer}, [layer]
    while todo:
        for dep in g.get(todo.pop(), []):
            for d in (lib_modules if dep == "every lib/ module" else [dep]):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
    return seen


STATE_FILES = ("config_lifecycle", "restore_queue", "state_dir")


def layer_of_path(rel, g):
    """The layer a source file (path from the root) or an include spelling
    belongs to, or None when it is not one of ours."""
    parts = rel.split("/")
    if rel == "model/defaults.h" or rel == "lib/model/defaults.h":
        return "model/defaults.h"
    if parts[0] == "lib" and len(parts) > 2:
        parts = parts[1:]
    if parts[0] == "agent":
        if len(parts) == 2:
            return "agent"
        if parts[1] == "core" and os.path.splitext(parts[-1])[0] in STATE_FILES:
            return "agent/state"
        return f"agent/{parts[1]}" if f"agent/{parts[1]}" in g else None
    if parts[0] == "tools" and len(parts) > 2:
        return f"tools/{parts[1]}" if f"tools/{parts[1]}" in g else None
    return parts[0] if parts[0] in g and len(parts) > 1 else None


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def undeclared(root, g):
    """Includes of a layer the including file's layer does not link: the
    headers too, which the compiler sees only where a source of the layer
    includes them."""
    out = []
    for tree in ("lib", "agent", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, tree)):
            for name in sorted(f for f in files if f.endswith((".h", ".cc"))):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                layer = layer_of_path(rel, g)
                if layer is None or layer == "model/defaults.h":
                    continue
                ok = allowed(g, layer) | {"model/defaults.h"}
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        target = layer_of_path(m.group(1), g) if m else None
                        if target is not None and target not in ok:
                            out.append(f"{rel}:{n}: {layer} includes {target} ({m.group(1)}), a layer it does "
                                       "not link (CMake)")
    return out


SOURCE_ROOT_INCLUDE = re.compile(
    r"target_include_directories\([^)]*\$\{CMAKE_(?:CURRENT_)?SOURCE_DIR\}(?:/(?:lib|agent|tools)[^\s)]*)?[\s)]")


def source_tree_roots(root):
    """include directories into the source tree: they would open every layer."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        if "CMakeLists.txt" in files:
            path = os.path.join(dirpath, "CMakeLists.txt")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in SOURCE_ROOT_INCLUDE.finditer(text):
                n = text.count("\n", 0, m.start()) + 1
                out.append(f"{os.path.relpath(path, root)}:{n}: an include directory into the source tree opens "
                           "every layer; use roced_include_root")
    return out


def table(g):
    """One row per set of dependencies, the layers that share it together."""
    rows = {}
    for layer, deps in g.items():
        rows.setdefault(", ".join(deps) or "(nothing of ours)", []).append(layer)
    width = max(len(", ".join(layers)) for layers in rows.values())
    lines = [f"{', '.join(layers).ljust(width)}  ->  {deps}" for deps, layers in rows.items()]
    return "\n".join([BEGIN, "```", *lines, "```", END])


def climbs(root):
    out = []
    for tree in CHECKED_TREES:
        for dirpath, _, files in os.walk(os.path.join(root, tree)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".c")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = CLIMB.match(line)
                        if m:
                            out.append(f"{os.path.relpath(path, root)}:{n}: #include \"{m.group(1)}\" climbs "
                                       "out of the include roots (.., an absolute path or include_roots); "
                                       "include it by its layer's path")
    return out


def families_outside(root):
    out = []
    for tree in FAMILY_TREES:
        for dirpath, _, files in os.walk(os.path.join(root, tree)):
            if os.path.relpath(dirpath, root).startswith(os.path.join("lib", "metrics")):
                continue
            for name in sorted(f for f in files if f.endswith((".h", ".cc"))):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        if FAMILY.search(line):
                            out.append(f"{os.path.relpath(path, root)}:{n}: a metric family built outside "
                                       "lib/metrics; define it in lib/metrics/families.h and report to it")
    return out


def main():
    root = sys.argv[1]
    write = "--write" in sys.argv[2:]
    g = graph(root)
    problems = climbs(root) + undeclared(root, g) + source_tree_roots(root) + families_outside(root)
    design = os.path.join(root, "docs", "design.md")
    with open(design, encoding="utf-8") as f:
        text = f.read()
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        problems.append(f"docs/design.md: no layer table between '{BEGIN}' and '{END}'")
    elif text[start:stop + len(END)] != table(g):
        if write:
            with open(design, "w", encoding="utf-8") as f:
                f.write(text[:start] + table(g) + text[stop + len(END):])
            print("layering: docs/design.md's layer table rewritten")
        else:
            problems.append("docs/design.md: the layer table is not the CMake files' graph "
                            "(python3 tests/layering_check.py . --write rewrites it)")
    for p in problems:
        print("layering:", p)
    print(f"layering: {len(g)} layers read from CMake, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The manifest of the plugin ABI's host function table: one line per entry of
RillHostApi in sdk/include/rill/abi.h, with the version that added it, its byte offset,
its name and its prototype. sdk/abi_manifest.txt is that manifest as shipped.

usage: scripts/abi-manifest.py --check   compare abi.h (and core/abi/host_api.cc's
                                         offset pins, and each version's frozen header in
                                         tests/compat) with sdk/abi_manifest.txt
       scripts/abi-manifest.py --write   write sdk/abi_manifest.txt from abi.h

Each version marker in abi.h says "shipped" or "in development"; the manifest's
"# shipped:" line records the shipped versions. A shipped entry never moves and never
changes its prototype: --check fails naming the entry and both versions of it. A new entry
is appended at the table's end under a version in development; --check then fails until
--write records it, so that each addition shows in review as a new manifest line. No entry
is ever added to a shipped version, and a shipped version stays shipped: both --check and
--write refuse either.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "sdk/include/rill/abi.h")
PINS = os.path.join(ROOT, "core/abi/host_api.cc")
MANIFEST = os.path.join(ROOT, "sdk/abi_manifest.txt")
FROZEN = {1: os.path.join(ROOT, "tests/compat/abi_1_0.h")}  # version: its frozen header
POINTER = 8  # the table holds 64-bit pointers after its two 32-bit header fields


def shipped_in_header(path=HEADER):
    """{version: True if its marker says shipped, False if in development}."""
    markers = re.findall(r"===== Version (\d+) \((shipped: [^)]*|in development)\) =====", open(path).read())
    return {int(v): state.startswith("shipped") for v, state in markers}


def shipped_in_manifest():
    """The versions sdk/abi_manifest.txt records as shipped."""
    for l in open(MANIFEST).read().splitlines():
        if l.startswith("# shipped:"):
            return {int(v) for v in l[len("# shipped:"):].split()}
    return set()


def shipping_problems(header):
    """What abi.h does against the shipped versions: an entry added to one, one unshipped."""
    states, shipped = shipped_in_header(), shipped_in_manifest()
    recorded = {m.split("\t")[2] for m in open(MANIFEST).read().splitlines() if m and not m.startswith("#")}
    problems = [f"version {v} has no marker saying 'shipped: ...' or 'in development'"
                for v in sorted({e[0] for e in header} - set(states))]
    problems += [f"version {v} is shipped (the manifest says so) but abi.h marks it in development"
                 for v in sorted(shipped) if not states.get(v, False)]
    problems += [f"entry '{e[2]}' is added to version {e[0]}, which is shipped: add it to a version in development"
                 for e in header if e[2] not in recorded and e[0] in shipped]
    return problems


def entries_in_header(path=HEADER):
    """[(version, offset, name, prototype)] of RillHostApi, in order."""
    text = open(path).read()
    body = re.search(r"typedef struct RillHostApi \{(.*?)\} RillHostApi;", text, re.S).group(1)
    entries, version, offset = [], 0, 0
    # Comments carry the version markers; declarations are what lies between them.
    for comment, code in re.findall(r"(/\*.*?\*/)|([^/]+|/)", body, re.S):
        if comment:
            marker = re.search(r"===== Version (\d+)", comment)
            if marker:
                version = int(marker.group(1))
            continue
        code = "\n".join(line for line in code.split("\n") if not line.strip().startswith("#"))
        for decl in code.split(";")[:-1] if ";" in code else []:
            decl = " ".join(decl.split())
            if not decl:
                continue
            fn = re.search(r"\(\*(\w+)\)", decl)
            name = fn.group(1) if fn else decl.split()[-1]
            if fn is None and offset >= 8:
                sys.exit(f"abi-manifest: '{decl}' is not a function pointer: the table holds only those after its header")
            entries.append((version, offset, name, decl))
            offset += 4 if offset < 8 else POINTER
    return entries


def pinned_offsets():
    """{name: offset} from core/abi/host_api.cc's RILL_PIN(name, index) asserts."""
    return {name: 8 + int(index) * POINTER
            for name, index in re.findall(r"RILL_PIN\((\w+),\s*(\d+)\)", open(PINS).read())}


def line(entry):
    return "%d\t%d\t%s\t%s" % entry


def check():
    header = entries_in_header()
    manifest = [l.split("\t") for l in open(MANIFEST).read().splitlines() if l and not l.startswith("#")]
    problems = shipping_problems(header)
    newly = sorted(v for v, s in shipped_in_header().items() if s and v not in shipped_in_manifest())
    if newly:
        problems.append(f"abi.h marks version(s) {newly} shipped; record that with scripts/abi-manifest.py --write")
    by_name = {e[2]: e for e in header}
    for version, offset, name, prototype in manifest:
        now = by_name.get(name)
        if now is None:
            problems.append(f"entry '{name}' (version {version}, offset {offset}) is gone from abi.h")
            continue
        if int(offset) != now[1]:
            problems.append(f"entry '{name}' moved: offset {offset} in the manifest, {now[1]} in abi.h")
        if int(version) != now[0]:
            problems.append(f"entry '{name}' changed version: {version} in the manifest, {now[0]} in abi.h")
        if prototype != now[3]:
            problems.append(f"entry '{name}' changed its prototype:\n    manifest: {prototype}\n    abi.h:    {now[3]}")
    recorded = {m[2] for m in manifest}
    appended = [e for e in header if e[2] not in recorded]
    if appended and not problems:
        problems.append("entries added to abi.h but not to the manifest (record them with "
                        "scripts/abi-manifest.py --write): " + ", ".join(f"{e[2]} (version {e[0]})" for e in appended))
    for version, path in FROZEN.items():
        shipped = [(int(m[0]), int(m[1]), m[2], m[3]) for m in manifest if int(m[0]) <= version]
        if entries_in_header(path) != shipped:
            problems.append(f"{os.path.relpath(path, ROOT)}, the frozen header of version {version}, no longer "
                            f"declares the manifest's entries of versions 1 to {version}")
    pins = pinned_offsets()
    for version, offset, name, _ in header[2:]:
        if pins.get(name) != offset:
            problems.append(f"entry '{name}' at offset {offset} has no RILL_PIN({name}, {(offset - 8) // POINTER}) "
                            f"in core/abi/host_api.cc" + (f" (pinned at {pins[name]})" if name in pins else ""))
    if problems:
        print("abi-manifest: the ABI no longer matches sdk/abi_manifest.txt. Shipped entries never "
              "move or change; new ones are appended.\n- " + "\n- ".join(problems))
        return 1
    print(f"abi-manifest: {len(header)} entries of RillHostApi match sdk/abi_manifest.txt and their pins")
    return 0


def write():
    header = entries_in_header()
    problems = shipping_problems(header)
    if problems:
        print("abi-manifest: not written:\n- " + "\n- ".join(problems))
        return 1
    shipped = sorted(v for v, s in shipped_in_header().items() if s)
    with open(MANIFEST, "w") as f:
        f.write("# The plugin ABI's host function table (RillHostApi), as shipped: version added, byte\n"
                "# offset, name, prototype. Written by scripts/abi-manifest.py --write; the test\n"
                "# abi_manifest_is_current fails when abi.h no longer matches it.\n"
                "# shipped: " + " ".join(map(str, shipped)) + "\n")
        for entry in header:
            f.write(line(entry) + "\n")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(check())
    if sys.argv[1:] == ["--write"]:
        sys.exit(write())
    sys.exit(__doc__)

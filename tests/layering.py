"""The layering rules of docs/architecture.md, checked on a source tree.

  check(root) -> list of "file:line: what is wrong"

Layers, from the bottom: src/ (the datapath core), backends/ (devices, which
see only the provider contract), sim/ (replay and simulation), app/ (the
flowswitch command). A file may include system headers, files of its own
layer and files of the layers below it, except:
  * src/ includes no I/O, thread or INI library (<pcap.h>, <rte_*.h>,
    <ini.h>, <pthread.h>, <jansson.h>) and calls no clock, thread or stdio
    printing function: it knows no file, thread or system clock;
  * backends/ include only the provider headers (PROVIDER) and their own
    folder's files;
  * sim/ includes nothing from app/ (it may use the dummy backend, whose
    ports it models).
A module is a .c file with its .h, plus X-inl.h and X-provider.h, which are
the inline body and the provider side of module X; no two modules may
include each other, directly or through others (no include cycles).
"""
import os
import re

PROVIDER = {"netdev-provider.h", "netdev.h", "netdev-caps.h", "packet.h", "offload.h",
            "proto.h", "util.h"}
LAYERS = ["src", "backends", "sim", "app"]  # bottom to top
CORE_FORBIDDEN_SYS = re.compile(r"^(pcap[./]|pcap\.h|rte_|ini\.h|pthread\.h|jansson\.h)")
CORE_FORBIDDEN_CALLS = re.compile(
    r"\b(clock_gettime|gettimeofday|pthread_create|printf|fprintf|puts|fputs|perror)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def _files(root):
    for layer in LAYERS:
        base = os.path.join(root, layer)
        for d, _, names in os.walk(base):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield layer, os.path.relpath(os.path.join(d, n), root)


def _module(rel):
    """The module a file belongs to: its folder and base name, with the
    -inl/-provider headers folded into their module."""
    d, n = os.path.split(rel)
    stem = n[:-2]
    for suffix in ("-inl", "-provider"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    if d.startswith("backends"):
        return d  # a backend is one module
    return os.path.join(d, stem)


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def check(root):
    bad = []
    files = list(_files(root))
    # Where each quoted include resolves: same folder first, then the layer
    # folders (what the Makefile's -I paths give).
    by_name = {}
    for layer, rel in files:
        by_name.setdefault(os.path.basename(rel), []).append((layer, rel))
    edges = {}
    for layer, rel in files:
        path = os.path.join(root, rel)
        with open(path, errors="replace") as f:
            text = f.read()
        here = os.path.dirname(rel)
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            where = f"{rel}:{n}: {line.strip()}"
            if kind == "<":
                if layer == "src" and CORE_FORBIDDEN_SYS.match(name):
                    bad.append(f"{where}: the core uses no I/O, thread or INI library")
                continue
            target = None
            if os.path.exists(os.path.join(root, here, name)):
                target = os.path.normpath(os.path.join(here, name))
            elif os.path.exists(os.path.join(root, name)):
                target = os.path.normpath(name)
            else:
                cands = by_name.get(os.path.basename(name), [])
                if len(cands) == 1:
                    target = cands[0][1]
            if target is None:
                continue
            tlayer = target.split(os.sep)[0]
            if tlayer not in LAYERS:
                continue
            if layer == "backends":
                ok = (os.path.dirname(target) == here or
                      (tlayer == "src" and os.path.basename(target) in PROVIDER))
                if not ok:
                    bad.append(f"{where}: a backend sees only the provider headers "
                               f"({', '.join(sorted(PROVIDER))})")
            elif LAYERS.index(tlayer) > LAYERS.index(layer):
                bad.append(f"{where}: {layer}/ must not include {tlayer}/ (dependencies "
                           f"point down)")
            a, b = _module(rel), _module(target)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, where)
        if layer == "src":
            code = _strip_comments(text)
            for n, line in enumerate(code.splitlines(), 1):
                m = CORE_FORBIDDEN_CALLS.search(line)
                if m:
                    bad.append(f"{rel}:{n}: the core calls no {m.group(1)}(): no clock, "
                               f"thread or printing in src/")
    bad.extend(_cycles(edges))
    return bad


def _cycles(edges):
    """Every include cycle between modules, once, as its edges."""
    out, seen = [], set()
    color = {}

    def visit(u, stack):
        color[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, {})):
            if color.get(v) == 1:
                cyc = stack[stack.index(v):] + [v]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    steps = "; ".join(edges[x][y] for x, y in zip(cyc, cyc[1:]))
                    out.append(f"include cycle {' -> '.join(cyc)}: {steps}")
            elif not color.get(v):
                visit(v, stack)
        stack.pop()
        color[u] = 2

    for u in sorted(edges):
        if not color.get(u):
            visit(u, [])
    return out

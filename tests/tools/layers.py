#!/usr/bin/env python3
"""Checks the layering of the workspace:

1. each library crate depends only on the shardsmith crates below it (the table
   ALLOWED), and none on the CLI's crates (clap, anyhow, indicatif);
2. no crate has an import cycle between its files, resolving each `crate::`, `super::`,
   `self::` and child-module path to the file that defines the item (through `pub use`
   re-exports); a child that uses an item of the parent file that declares it is a
   cycle when the parent uses the child.

usage: tests/tools/layers.py [CRATE_SRC_DIR...]   (default: the workspace's crates)
Prints each problem and exits 1 if there is one.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """Source without comments, string literals and `#[cfg(test)]` modules' bodies."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'b?r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'b?"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"b?'(?:\\.|[^'\\])'", "''", text)
    # Test modules may use anything of their parent.
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+" + IDENT + r"\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return inline_supers("".join(out), 0)


def inline_supers(text, depth):
    """`super::` inside inline `mod x { ... }` blocks rewritten as seen from the file:
    at depth 1 `super::a` is the file's own `self::a`, `super::super::a` its parent's."""
    out, i = [], 0
    while True:
        m = re.compile(r"\bmod\s+" + IDENT + r"\s*\{").search(text, i)
        if m is None:
            break
        out.append(shift_supers(text[i : m.end()], depth))
        level, j = 1, m.end()
        while j < len(text) and level:
            level += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        out.append(inline_supers(text[m.end() : j], depth + 1))
        i = j
    out.append(shift_supers(text[i:], depth))
    return "".join(out)


def shift_supers(text, depth):
    if depth == 0:
        return text

    def shift(m):
        k = m.group(0).count("super::")
        return "self::" if k <= depth else "super::" * (k - depth)

    return re.sub(r"(?<![:\w])(?:super::)+", shift, text)


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        self.text = {}
        self.tests = set()
        self._load((), os.path.join(src, "lib.rs") if os.path.exists(os.path.join(src, "lib.rs")) else os.path.join(src, "main.rs"))

    def _load(self, path, file):
        self.files[path] = file
        raw = open(file, encoding="utf-8").read()
        self.text[path] = strip(raw)
        base = os.path.dirname(file) if file.endswith(("lib.rs", "main.rs", "mod.rs")) else file[:-3]
        for m in re.finditer(r"(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", raw):
            name = m.group(2)
            for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                if os.path.exists(cand):
                    if m.group(1):
                        self.tests.add(path + (name,))
                    self._load(path + (name,), cand)
                    break

    def uses(self, path):
        """(absolute path segments) of every `crate::`/`super::`/`self::` path in a module."""
        text = self.text[path]
        found = []
        # Expand `use a::{b, c::{d}}` groups.
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for item in expand(m.group(1).replace("\n", " ")):
                if item and (path + (item[0],)) in self.files:
                    item = ["self"] + item
                found.append(item)
        for m in re.finditer(r"(?<![:\w])((?:crate|super|self)(?:::" + IDENT + r")+)", text):
            found.append(m.group(1).split("::"))
        # Paths that start with a child module's name (`plan::plan(...)`).
        for m in re.finditer(r"(?<![:\w])(" + IDENT + r")::", text):
            if path + (m.group(1),) in self.files:
                rest = re.match(r"(" + IDENT + r"(?:::" + IDENT + r")*)", text[m.start():])
                found.append(["self"] + rest.group(1).split("::"))
        out = []
        for segs in found:
            if not segs or segs[0] not in ("crate", "super", "self"):
                continue
            base = list(path)
            i = 0
            if segs[0] == "crate":
                base, i = [], 1
            while i < len(segs) and segs[i] in ("super", "self"):
                if segs[i] == "super":
                    base = base[:-1]
                i += 1
            out.append(tuple(base) + tuple(s for s in segs[i:] if s not in ("{", "}")))
        return out

    def reexports(self, path):
        """name -> absolute path, for `pub use` items of a module."""
        result = {}
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", self.text[path]):
            for segs in expand(m.group(1).replace("\n", " ")):
                name = segs[-1]
                if " as " in name:
                    name = name.split(" as ")[1].strip()
                    segs = segs[:-1] + [segs[-1].split(" as ")[0].strip()]
                if segs[0] in ("crate", "super", "self"):
                    base = list(path)
                    i = 0
                    if segs[0] == "crate":
                        base, i = [], 1
                    while i < len(segs) and segs[i] in ("super", "self"):
                        if segs[i] == "super":
                            base = base[:-1]
                        i += 1
                    result[name] = tuple(base) + tuple(segs[i:])
                elif (path + (segs[0],)) in self.files:
                    result[name] = path + tuple(segs)
        return result

    def resolve(self, segs, depth=0):
        """The module (file) that defines the item named by absolute path `segs`."""
        module = ()
        for i, seg in enumerate(segs):
            if module + (seg,) in self.files:
                module = module + (seg,)
                continue
            if depth < 8:
                target = self.reexports(module).get(seg)
                if target is not None and target != tuple(segs[: i + 1]):
                    return self.resolve(list(target) + list(segs[i + 1 :]), depth + 1)
            return module
        return module


def expand(tree):
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]]."""
    tree = tree.strip()
    depth, top = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                top = i
            depth += 1
        elif ch == "}":
            depth -= 1
    if top is None:
        return [[s.strip() for s in tree.split("::") if s.strip()]]
    prefix = [s.strip() for s in tree[:top].split("::") if s.strip()]
    inner = tree[top + 1 : tree.rindex("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    out = []
    for part in parts:
        if not part.strip():
            continue
        for sub in expand(part):
            out.append(prefix + sub if sub != ["self"] else prefix)
    return out


def cycles(crate):
    graph = {}
    for path in crate.files:
        if any(path[: i + 1] in crate.tests for i in range(len(path))):
            continue
        edges = set()
        for segs in crate.uses(path):
            target = crate.resolve(list(segs))
            if target != path and target in crate.files:
                edges.add(target)
        graph[path] = edges
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return graph, sccs


# Which shardsmith crates each library may depend on (the arrows go one way:
# cli -> inspect -> pack/tokens/checkpoint -> shard -> store -> manifest; shard and pack
# -> image, a leaf that knows no other shardsmith crate).
ALLOWED = {
    "shardsmith-manifest": set(),
    "shardsmith-image": set(),
    "shardsmith-signing": {"shardsmith-manifest"},
    "shardsmith-store": {"shardsmith-manifest"},
    "shardsmith-shard": {"shardsmith-store", "shardsmith-manifest", "shardsmith-image"},
    "shardsmith-pack": {
        "shardsmith-shard",
        "shardsmith-store",
        "shardsmith-manifest",
        "shardsmith-image",
    },
    "shardsmith-tokens": {"shardsmith-shard", "shardsmith-store", "shardsmith-manifest"},
    "shardsmith-checkpoint": {"shardsmith-manifest"},
    "shardsmith-inspect": {
        "shardsmith-shard",
        "shardsmith-tokens",
        "shardsmith-checkpoint",
        "shardsmith-manifest",
    },
    # The Python API (cli/python): the application library (shardsmith-cli), whose
    # verify, manifest and audit it runs, and the manifest crate for the findings' type.
    "shardsmith-python": {"shardsmith-cli", "shardsmith-manifest"},
}
CLI_ONLY = {"clap", "anyhow", "indicatif"}


def dependencies(toml):
    """(package name, names under [dependencies]) of a Cargo.toml."""
    name, deps, section = None, set(), None
    for line in open(toml, encoding="utf-8"):
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
            continue
        m = re.match(r"([A-Za-z0-9_-]+)\s*(?:\.workspace)?\s*=", line)
        if not m:
            continue
        if section == "package" and m.group(1) == "name":
            name = line.split("=", 1)[1].strip().strip('"')
        elif section == "dependencies":
            deps.add(m.group(1))
    return name, deps


def check_crates(crate_dirs):
    bad = 0
    for d in crate_dirs:
        toml = os.path.join(d, "Cargo.toml")
        if not os.path.exists(toml):
            continue
        name, deps = dependencies(toml)
        if name not in ALLOWED:
            if name != "shardsmith-cli":
                print(f"{toml}: crate `{name}` has no place in the layering table (tests/tools/layers.py)")
                bad += 1
            continue
        ours = {dep for dep in deps if dep.startswith("shardsmith-")}
        for dep in sorted(ours - ALLOWED[name]):
            print(f"{name} depends on {dep}, which is not below it")
            bad += 1
        for dep in sorted(deps & CLI_ONLY):
            print(f"{name} depends on {dep}: only the CLI may")
            bad += 1
    return bad


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dirs = sys.argv[1:] or sorted(
        os.path.join(d, "src")
        for d in [os.path.join(root, "cli"), os.path.join(root, "cli", "python"), os.path.join(root, "manifest"), os.path.join(root, "manifest", "signing")]
        + [os.path.join(root, "formats", c) for c in sorted(os.listdir(os.path.join(root, "formats")))]
        if os.path.isdir(os.path.join(d, "src"))
    )
    bad = 0 if sys.argv[1:] else check_crates(sorted({os.path.dirname(d) for d in dirs}))
    for src in dirs:
        crate = Crate(src)
        graph, sccs = cycles(crate)
        for comp in sccs:
            bad += 1
            rel = lambda p: os.path.relpath(crate.files[p], root)
            names = sorted(rel(p) for p in comp)
            print(f"import cycle in {os.path.relpath(src, root)}: " + " <-> ".join(names))
            for p in sorted(comp):
                back = sorted(rel(q) for q in graph[p] if q in comp)
                print(f"    {rel(p)} uses {', '.join(back)}")
    if bad:
        sys.exit(1)
    print(f"{len(dirs)} crates: layering as allowed, no import cycles")


main()

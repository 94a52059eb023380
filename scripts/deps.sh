#!/usr/bin/env bash
# Lists the `crate::` edges between the stage folders of src/ and flags the ones that break the layering
# base, sys < cli < protocol < workload < net < config < stats < engine < report < {root, app}
# (ARCHITECTURE.md): a stage may use only the stages before it. Then it lists the import cycles between
# files. Comments and inline `#[cfg(test)] mod tests { .. }` modules are left out (a `mod tests;` line
# only: what follows it is read). Exits 1 when it flags anything.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys
from collections import defaultdict

# Rank of each stage: a stage may use the stages of lower rank and its own, never a higher one. A leaf file
# directly in src/ (os_error.rs) is "base", below all; the root (lib.rs, main.rs) and the subcommand stages
# under app/ (session, capacity, fleet, the memtier personality) share the top rank and may use everything.
ORDER = {"base": 0, "sys": 0, "cli": 1, "protocol": 2, "workload": 3, "net": 4, "config": 5, "stats": 6,
         "engine": 7, "report": 8, "": 9, "app": 9}

files = {}
for d, _, names in os.walk("src"):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(d, n)
            files[p] = open(p).read()

def module_of(path):
    parts = path[len("src/"):-len(".rs")].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts

def file_of(parts):
    """The file that defines the longest prefix of the module path `parts`."""
    for k in range(len(parts), 0, -1):
        base = "src/" + "/".join(parts[:k])
        for cand in (base + ".rs", base + "/mod.rs"):
            if cand in files:
                return cand
    return "src/lib.rs"

def stage(path):
    parts = module_of(path)
    if len(parts) == 1 and path == f"src/{parts[0]}.rs":
        return "base"
    return parts[0] if parts and parts[0] in ORDER else ""

def block_end(text, i):
    """The index just past the `}` that closes the `{` at `i`, skipping strings, chars and comments."""
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
            continue
        raw = re.match(r'b?r(#*)"', text[i:i + 260]) if c in "br" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) else None
        if raw:
            close = '"' + raw.group(1)
            j = text.find(close, i + raw.end())
            i = n if j < 0 else j + len(close)
            continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "'":
            ch = re.match(r"'(?:\\.[^']*|[^\\'])'", text[i:i + 16])
            if ch:
                i += ch.end()
                continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n

def code(text):
    # Inline test modules are left out whole; `#[cfg(test)] mod tests;` (an outer file) only loses that line.
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*(\{|;)", text)
        if not m:
            break
        end = m.end() if m.group(1) == ";" else block_end(text, m.end() - 1)
        text = text[: m.start()] + text[end:]
    return "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))

PATH = re.compile(r"\bcrate::((?:[a-z_][a-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)")
BRACE = re.compile(r"\bcrate::((?:[a-z_][a-z0-9_]*::)*)\{([^}]*)\}")
SUPER = re.compile(r"(?<!::)\bsuper::((?:[a-z_][a-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)")
SUPER_BRACE = re.compile(r"(?<!::)\bsuper::((?:[a-z_][a-z0-9_]*::)*)\{([^}]*)\}")
# A visibility (`pub(in crate::engine::ring)`) names where an item is seen, not what a file uses.
VISIBILITY = re.compile(r"\bpub\(in [a-z_:]+\)")
edges = defaultdict(set)  # file -> files it uses
for p, text in files.items():
    body = VISIBILITY.sub("pub", code(text))
    targets = []
    for m in PATH.finditer(body):
        targets.append(m.group(1).split("::"))
    for m in BRACE.finditer(body):
        prefix = [x for x in m.group(1).split("::") if x]
        for item in m.group(2).split(","):
            item = item.strip().split(" ")[0]
            if item:
                targets.append(prefix + item.split("::"))
    # Children named from a mod.rs without `crate::` (`use tls::TlsClient`), and `super::` from a child.
    me = module_of(p)
    for child in re.findall(r"^\s*(?:pub(?:\([a-z]+\))? )?mod ([a-z_0-9]+);", body, re.M):
        if re.search(r"(?<![:\w])" + child + r"::", body):
            targets.append(me + [child])
    # `super::x::Y` names the sibling x (or the parent's own item Y): resolved like a `crate::` path.
    for m in SUPER.finditer(body):
        targets.append(me[:-1] + m.group(1).split("::"))
    for m in SUPER_BRACE.finditer(body):
        prefix = [x for x in m.group(1).split("::") if x]
        for item in m.group(2).split(","):
            item = item.strip().split(" ")[0]
            if item and item != "*":
                targets.append(me[:-1] + prefix + item.split("::"))
    for t in targets:
        f = file_of(t)
        if f != p:
            edges[p].add(f)

bad = 0
stage_edges = defaultdict(set)
for a, bs in sorted(edges.items()):
    for b in sorted(bs):
        sa, sb = stage(a), stage(b)
        if sa != sb:
            stage_edges[(sa or "root", sb or "root")].add(f"{a} -> {b}")
print("edges between stages:")
for (sa, sb), es in sorted(stage_edges.items(), key=lambda kv: (ORDER[kv[0][0].replace("root", "")], kv[0][1])):
    up = ORDER[sb.replace("root", "")] > ORDER[sa.replace("root", "")]
    print(f"  {sa:>9} -> {sb:<9} {len(es):3} file edge(s){'  UP' if up else ''}")
    if up:
        bad += 1
        for e in sorted(es):
            print(f"      {e}")

# Cycles: strongly connected components of more than one file (Tarjan).
index, low, onstack, stack, sccs, counter = {}, {}, set(), [], [], [0]
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); onstack.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); onstack.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(files):
    if v not in index:
        visit(v)
print("import cycles between files:" + ("" if sccs else " none"))
for c in sccs:
    bad += 1
    print("  " + " <-> ".join(c))
sys.exit(1 if bad else 0)
PY

"""The runner's modules import one another in one direction only: no import circle inside
scripts/tunbedlib, counting the imports inside functions too (a circle that is closed only at
run time is still one: each side must be read to understand the other). Every module of the
package is parsed with `ast`; the circles are the strongly connected components of the import
graph. Run as a script with a directory, it prints the circles of that tree (the lint), and
fails on any."""

import ast
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "scripts", "tunbedlib")


def modules(root):
    """{dotted name below the package: path} of every .py file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(d, f)
    return out


def resolve(name, level, module, is_package, known):
    """The module of the package an import names, or None for one outside it."""
    if level == 0:
        if not name.startswith("tunbedlib"):
            return None
        parts = name.split(".")[1:]
    else:
        base = module.split(".") if module else []
        if not is_package:
            base = base[:-1]
        if level > 1:
            base = base[:len(base) - (level - 1)]
        parts = base + (name.split(".") if name else [])
    dotted = ".".join(parts)
    return dotted if dotted in known else None


def imports(known):
    """{module: {modules it imports}}, an `from . import a, b` as a and b where they are
    modules, the package (its __init__) otherwise."""
    graph = {}
    for mod, path in known.items():
        is_package = path.endswith("__init__.py")
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    got = resolve(a.name, 0, mod, is_package, known)
                    if got is not None:
                        out.add(got)
            elif isinstance(node, ast.ImportFrom):
                base = resolve(node.module or "", node.level, mod, is_package, known)
                for a in node.names:
                    sub = resolve(((node.module + ".") if node.module else "") + a.name,
                                  node.level, mod, is_package, known)
                    if sub is not None:
                        out.add(sub)
                    elif base is not None:
                        out.add(base)
        out.discard(mod)
        graph[mod] = out
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan's), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def circles_of(root):
    return circles(imports(modules(root)))


class Imports(unittest.TestCase):
    def test_no_circle(self):
        found = circles_of(PACKAGE)
        self.assertEqual(found, [], "import circles in scripts/tunbedlib: " + "; ".join(
            " <-> ".join(c) for c in found))

    def test_the_lint_finds_a_circle(self):
        # A circle through a function-local import, and one through `from . import x`.
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            pkg = os.path.join(d, "tunbedlib")
            os.makedirs(os.path.join(pkg, "kinds"))
            for path, text in (("__init__.py", ""), ("a.py", "from . import b\n"),
                               ("b.py", "def f():\n    from .kinds import c\n"),
                               ("kinds/__init__.py", ""), ("kinds/c.py", "from ..a import x\n"),
                               ("d.py", "from . import e\n"), ("e.py", "import tunbedlib.d\n"),
                               ("f.py", "import os\nfrom . import a\n")):
                with open(os.path.join(pkg, path), "w") as f:
                    f.write(text)
            self.assertEqual(circles_of(pkg), [["a", "b", "kinds.c"], ["d", "e"]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
        for c in circles_of(sys.argv[1]):
            print(" <-> ".join(c))
        sys.exit(0)
    unittest.main()

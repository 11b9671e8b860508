"""The import graph of the project's own packages has no circle, and every arrow points down:
the engine imports nothing of ours, the protocol only the engine, and inside ``server/`` each
layer only the layers below it (ARCHITECTURE.md draws the same list). Imports made only for
type checking count too: a circle through them is still a circle a reader has to untangle.

The graph is read from the source (``ast``), not by importing, so a test of it costs nothing
and sees every import, including those inside functions."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ("clients/python/mandala", "clients/python/protocol", "clients/python/mandala_client")
"""The bot author's distribution (clients/python/pyproject.toml)."""
PACKAGES = (*CLIENT, "server", "mandala_cli")

LAYERS: list[tuple[str, ...]] = [
    ("mandala",),
    ("protocol",),
    # server/, bottom up
    ("server", "server.config", "server.common", "server.ratings"),
    ("server.storage",),
    ("server.connections",),
    ("server.recording",),
    ("server.games",),
    ("server.audience",),
    ("server.ladder",),
    ("server.tournaments",),
    ("server.cluster",),
    ("server.arena",),
    ("server.http",),
    ("server.app",),
    # the command lines, on top of everything
    ("mandala_client",),
    ("mandala_cli",),
]
"""Bottom up: a module may import its own layer and those before it, never one after it."""


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT / "clients" / "python" if "clients" in path.parts else ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules ``name`` imports (the longest known prefix of each import)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets += [module] + [f"{module}.{alias.name}" for alias in node.names]
    out = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def layer_of(module: str) -> int:
    best, depth = -1, -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = i, len(prefix)
    assert best >= 0, f"{module} is in no layer: add it to LAYERS (and ARCHITECTURE.md)"
    return best


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles() -> None:
    assert circles(graph()) == []


def test_every_import_points_down_the_layers() -> None:
    upward = [f"{a} -> {b}" for a, targets in sorted(graph().items()) for b in sorted(targets)
              if layer_of(b) > layer_of(a)]
    assert upward == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


CLIENT_REQUIRES = {"msgspec", "aiohttp"}
"""The third-party packages clients/python/pyproject.toml depends on."""
TRAIN_REQUIRES = {"numpy", "pettingzoo", "gymnasium"}
"""Its ``train`` extra's: only the training environments (``mandala_client.env``) import them."""


def test_the_client_distribution_stands_alone() -> None:
    """What ``pip install ./clients/python`` installs imports only itself, the standard library
    and the client's own dependencies (the training environments also their extra's): never the
    server, its command line, or a package only the server depends on."""
    known = modules()
    ours = {name for name, path in known.items() if any(str(path).startswith(str(ROOT / c)) for c in CLIENT)}
    tops = {name.partition(".")[0] for name in ours}
    outside: list[str] = []
    for name in sorted(ours):
        tree = ast.parse(known[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                targets = [node.module or ""]
            else:
                continue
            for target in targets:
                top = target.partition(".")[0]
                allowed = CLIENT_REQUIRES | (TRAIN_REQUIRES if name.startswith("mandala_client.env") else set())
                if top not in tops and top not in sys.stdlib_module_names and top not in allowed:
                    outside.append(f"{name} imports {target}")
    assert ours >= {"mandala", "protocol", "mandala_client", "mandala_client.cli"}
    assert outside == []

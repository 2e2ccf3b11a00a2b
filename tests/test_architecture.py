"""The import rules of docs/architecture.md, checked on the code's own imports (AST, nothing run).

Run alone: ``.venv/bin/python -m pytest -q tests/test_architecture.py``. Each rule is also shown
to fail on a small tree that breaks it, so that a rule that can no longer fail is noticed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "benchmarks", "contract", "harness", "scenarios", "targets")
HARNESS_FLOORS = ("processes", "campaign", "sim", "live", "judge", "validate", "cli")
"""harness/'s subpackages from the bottom up: each imports only those below it (and itself);
modules at harness/'s own root (the runners' events) stand below them all."""
NOT_TRAFFIC_MODELS = {"scenarios.locustfile", "scenarios.live_plan", "scenarios.remote_sides", "scenarios.wire"}
"""scenarios/ modules that replay models over HTTP rather than being models (the wire reads an
answer's limit fields as the contract keeps them)."""
STORE_MAY_IMPORT = ("targets.stores", "targets.algorithms", "contract", "targets.redact")
"""A store's imports: stores, algorithms, the contract, and the redaction of a Redis URL's password."""
PURE_MAY_IMPORT = ("contract.errors", "contract.params", "contract.routes", "contract.stores")
ALGORITHM_INTERFACE = ("targets.algorithms", "targets.algorithms.base", "targets.algorithms.policy",
                       "targets.algorithms.adaptive_rules")
"""What of targets/algorithms/ the rest of the project may import: the registry, the Algorithm and
Decision, the policy, and the readings' type; never one algorithm's module (its hooks answer)."""
MAX_FUNCTION_LINES = 59
"""Every function under 60 lines, its decorators and docstring included."""
"""The modules of the project the pure rooms may import: the base class of bad input, the one
parameter parser (with its bounds), the one route catalogue and the store names, all on the
ground floor."""


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the project's packages (a package by its __init__)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of a project module by a project module, lazy and TYPE_CHECKING ones included."""
    known = modules(root)
    found = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node, package, known):
                if target != name:
                    found.append(Import(name, target, node.lineno))
    return found


def _targets(node: ast.AST, package: str, known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield from _known(alias.name, known)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, *([node.module] if node.module else [])])
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield from _known(sub if sub in known else base, known)


def _known(name: str, known: dict[str, Path]) -> Iterator[str]:
    """The longest project module that ``name`` is or lies in; nothing for a library."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in known:
            yield ".".join(parts[:i])
            return


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _harness_floor(name: str) -> int:
    part = name.split(".")[1] if name.count(".") >= 1 else ""
    return HARNESS_FLOORS.index(part) + 1 if part in HARNESS_FLOORS else 0


def violations(root: Path) -> list[str]:
    """Every broken rule, one line each: ``source -> target: rule``."""
    found = []
    graph: dict[str, set[str]] = {name: set() for name in modules(root)}
    for imp in imports(root):
        graph[imp.source].add(imp.target)
        s, t, where = imp.source, imp.target, f"{imp.source}:{imp.line} -> {imp.target}"
        if _in(s, "targets.algorithms") and not (_in(t, "targets.algorithms") or t in PURE_MAY_IMPORT):
            found.append(f"{where}: an algorithm imports nothing of the project")
        if _in(s, "scenarios") and s not in NOT_TRAFFIC_MODELS and not (_in(t, "scenarios") or t in PURE_MAY_IMPORT):
            found.append(f"{where}: a traffic model imports nothing of the project")
        if (_in(s, "targets") or _in(s, "scenarios")) and any(_in(t, p) for p in ("analysis", "harness", "benchmarks")):
            found.append(f"{where}: targets and scenarios import only targets, scenarios and contract")
        if (_in(s, "targets") and _in(t, "scenarios")) or (_in(s, "scenarios") and _in(t, "targets")):
            found.append(f"{where}: targets and scenarios never import each other (they meet in the contract)")
        if _in(s, "targets.stores") and not any(_in(t, p) for p in STORE_MAY_IMPORT):
            found.append(f"{where}: a store imports only stores, algorithms and the contract")
        if s == "harness.events" and not _in(t, "contract"):
            found.append(f"{where}: the runners' events import only the contract")
        if _in(s, "contract") and not _in(t, "contract"):
            found.append(f"{where}: the results contract imports nothing of the project")
        if _in(s, "analysis") and not (_in(t, "analysis") or _in(t, "contract")):
            found.append(f"{where}: analysis imports only analysis and contract")
        if _in(s, "harness") and _in(t, "harness") and _harness_floor(t) > _harness_floor(s):
            found.append(f"{where}: a harness subpackage imports only those below it ({' < '.join(HARNESS_FLOORS)})")
        if (_in(s, "targets") or _in(s, "harness")) and not _in(s, "targets.algorithms") and \
                _in(t, "targets.algorithms") and not any(_in(t, m) for m in ALGORITHM_INTERFACE[1:]) and t != ALGORITHM_INTERFACE[0]:
            found.append(f"{where}: only the registry names an algorithm's module (ask its Algorithm hooks)")
        if _in(t, "benchmarks") and not _in(s, "benchmarks"):
            found.append(f"{where}: nothing imports benchmarks (the command line runs them by module name)")
    found += [f"circle: {' -> '.join(c)}" for c in circles(graph)]
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if package != "benchmarks" and (path.stem == "bench" or path.stem.startswith("bench_") or path.stem.endswith("_bench")):
                found.append(f"{path.relative_to(root)}: a benchmark outside benchmarks/")
    for folder in [root / "harness", *(p for p in (root / "harness").rglob("*") if p.is_dir())]:
        stems = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
        for prefix in {s.split("_")[0] for s in stems if "_" in s}:
            family = sorted(s for s in stems if s.startswith(prefix + "_"))
            if len(family) > 1:
                found.append(f"{folder.relative_to(root)}: a file-name prefix family {prefix}_*: {', '.join(family)} (a subpackage?)")
    return found


def long_functions(root: Path) -> list[str]:
    """Every function of the project longer than MAX_FUNCTION_LINES, as ``path:line name (N lines)``."""
    found = []
    for path in modules(root).values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan), as a path round it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_the_house_keeps_its_import_rules():
    assert violations(ROOT) == []


def test_every_function_is_under_60_lines(tmp_path):
    assert long_functions(ROOT) == []
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    root = _tree(tmp_path, {"harness/a.py": f"def fits():\n{body}\n\ndef too_long():\n{body}    x = 0\n"})
    assert long_functions(root) == [f"harness/a.py:{MAX_FUNCTION_LINES + 3} too_long ({MAX_FUNCTION_LINES + 1} lines)"]


def test_the_checker_reads_this_house():
    """Enough edges that an empty answer means something: the known one-way flow is seen."""
    seen = {(i.source, i.target) for i in imports(ROOT)}
    assert ("harness.live.runner", "contract.schema") in seen
    assert ("targets.decision_log", "contract.schema") in seen
    assert ("harness.cli.main", "harness.cli.run") in seen  # `from . import run as run_cmd`
    assert ("analysis.report", "contract.summary") in seen


BREACHES = {
    "targets/algorithms/leak.py": ("from targets.config import X\n", "an algorithm imports nothing"),
    "scenarios/model.py": ("from contract.schema import X\n", "a traffic model imports nothing"),
    "scenarios/live_plan.py": ("from targets.config import X\n", "targets and scenarios never import each other"),
    "targets/config.py": ("from scenarios import live_plan\n", "targets and scenarios never import each other"),
    "targets/stores/memory.py": ("from targets.config import X\n", "a store imports only stores"),
    "harness/events.py": ("from targets.config import X\n", "the runners' events import only the contract"),
    "targets/readings.py": ("from .algorithms import adaptive\n", "only the registry names an algorithm's module"),
    "harness/sim/simulator.py": ("from targets.algorithms import Policy, adaptive\n", "only the registry names"),
    "harness/processes/ports.py": ("from harness.campaign import live\n", "imports only those below it"),
    "targets/app.py": ("def f():\n    from analysis import charts\n", "targets and scenarios import only"),
    "contract/schema.py": ("from analysis.metrics import m\n", "the results contract imports nothing"),
    "analysis/metrics.py": ("from harness.live import runner\n", "analysis imports only analysis and contract"),
    "harness/campaign/live.py": ("from harness.live.runner import LiveRunner\n", "imports only those below it"),
    "harness/cli/main.py": ("from benchmarks import core\n", "nothing imports benchmarks"),
    "targets/bench.py": ("", "a benchmark outside benchmarks/"),
    "harness/validate_checks.py": ("", "a file-name prefix family validate_*"),
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if str(parent) != ".":
                (root / parent / "__init__.py").touch()
        path.write_text(text)
    return root


@pytest.mark.parametrize("path", list(BREACHES))
def test_each_rule_fails_when_broken(tmp_path, path):
    text, rule = BREACHES[path]
    base = {"targets/config.py": "", "targets/algorithms/policy.py": "", "analysis/charts.py": "", "analysis/metrics.py": "",
            "harness/live/runner.py": "", "harness/campaign/live.py": "", "harness/cli/main.py": "",
            "benchmarks/core.py": "", "contract/errors.py": "", "contract/schema.py": "", "targets/stores/memory.py": "",
            "scenarios/live_plan.py": "", "harness/events.py": "", "harness/processes/ports.py": "",
            "harness/validate_lints.py": "", "targets/algorithms/adaptive.py": "",
            "targets/algorithms/__init__.py": "from . import adaptive\n", "targets/readings.py": "from .algorithms import Policy\n",
            "harness/sim/simulator.py": ""}
    assert violations(_tree(tmp_path / "clean", base)) == []
    found = violations(_tree(tmp_path / "broken", {**base, path: text}))
    assert len(found) == 1 and rule in found[0], found


def test_a_circle_fails(tmp_path):
    root = _tree(tmp_path, {"harness/live/a.py": "from . import b\n", "harness/live/b.py": "from harness.live.a import x\n"})
    assert violations(root) == ["circle: harness.live.a -> harness.live.b"]


def test_the_pure_rooms_may_take_the_base_of_bad_input_the_parser_and_the_routes(tmp_path):
    root = _tree(tmp_path, {"contract/errors.py": "", "contract/params.py": "", "contract/routes.py": "",
                            "targets/algorithms/policy.py": "from contract.errors import BadInput\nfrom contract.params import Bounds\n",
                            "scenarios/base.py": "from contract.errors import BadInput\nfrom contract.routes import route\n"})
    assert violations(root) == []
    broken = _tree(tmp_path / "b", {"contract/schema.py": "", "scenarios/base.py": "from contract.schema import X\n"})
    assert len(violations(broken)) == 1

"""Architecture: packages import only packages of their own rank or lower (issue 8), no import
cycle between packages nor between the modules of one package (issue 22), the product imports no
test or simulation code, and the cheap paths stay cheap (no heavy library loaded for nothing)."""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "netfleet"

#: package (or top-level module) → rank. Low → high; one may import its own rank or lower.
RANKS: dict[str, int] = {
    "errors": 0,  # base: exit statuses and the error types, no dependencies
    "units": 0,  # base: rate/size units and the goodput/wire ratio
    "values": 0,  # tolerant readers of raw JSON values (no netfleet imports)
    "iperf3json": 0,  # iperf3 -J JSON → intervals/ends rows (values only; no engine registry)
    "jsonparse": 0,  # JSON text → values, fast (pydantic_core) with json.loads's results
    "journalfile": 0,  # reading a JSON-lines journal someone else may have written (bounded)
    "readback": 0,  # reading back any other file netfleet wrote where others may write
    "children": 0,  # child-process hygiene (SIGCHLD) for every process netfleet starts
    "workers": 0,  # forkserver pools whose workers get the current environment
    "keymaterial": 0,  # detecting private-key material (specs, labels) without echoing it
    "aws": 0,  # base: the one boto3 client factory
    "tabular": 0,  # base: the neutral table value type every layer may return
    "plain": 0,  # base: value classes that behave as dataclasses, without dataclasses
    "durable": 0,  # base: fsync + atomic write-and-rename
    "text": 0,  # base: safe terminal text
    "pricetable": 0,  # base: the dated price table (JSON + model), read by report and cloud
    "providerrules": 0,  # base: the dated provider rules table verdicts rely on (issue 28)
    "plugins": 0,  # base: the seam test tooling (netfleet_sim) hooks into, loaded by env only
    "engines": 1,  # engine contract + declarations; runs against a session Protocol
    "spec": 2,  # campaign/inventory files, validated with the engines' params models
    "plan": 3,  # spec → planned runs
    "store": 4,  # raw results, date-partitioned
    "lab": 5,  # local emulated cloud (namespaces, shapers)
    "hosts": 6,  # where commands run: local, netns (lab), SSH
    "runner": 7,  # executes a plan on hosts with engines, into the store
    "catalog": 8,  # raw results → Parquet + queries returning data
    "analysis": 9,  # series, segments, buckets over catalog data
    "advice": 10,  # rules over analysis/doctor evidence
    "report": 11,  # every rendering: tables, cheat sheet, topology, plots
    "doctor": 12,  # pre-flight checks of a campaign: uses hosts, renders advice
    "cloud": 13,  # the cloud lifecycle + one package per cloud (aws): may need runner/store
    "demo": 13,  # the demo drives lab + runner + catalog + report
    "watch": 13,  # runs campaigns on a schedule, judges rounds with analysis.compare
    "api": 13,  # the facade over everything above
    "cli": 14,  # argument parsing + rendering only
    "__init__": 14,  # the package root re-exports lazily (function-level imports)
    "__main__": 14,  # python -m netfleet
}

#: (importer, imported) edges that run back, each with its reason. Keep this short.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def tree_of(path: Path) -> ast.Module:
    """``path`` parsed, once per content a worker sees (most tests walk every module)."""
    st = path.stat()
    return _parsed(path, st.st_mtime_ns, st.st_size)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "netfleet":
        return None
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def package_edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    known = modules()
    for module, path in known.items():
        src_pkg = package_of(module)
        for name in module_imports(path, module, known):
            dst_pkg = package_of(name)
            if src_pkg and dst_pkg and dst_pkg != src_pkg:
                if dst_pkg == "__init__":
                    continue  # `from netfleet import __version__` and the like
                edges[(src_pkg, dst_pkg)].append(module)
    return edges


def test_every_package_has_a_rank() -> None:
    names = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    names = {n for n in names if not n.startswith("__pycache__") and n not in {"py", "typed"}}
    missing = {
        n
        for n in names
        if (SRC / n).is_dir() or (SRC / f"{n}.py").exists()
        if n not in RANKS and n != "__pycache__"
    }
    assert not missing, f"give these a rank in RANKS: {sorted(missing)}"


def test_no_import_runs_up_the_layers() -> None:
    bad = []
    for (src, dst), modules in sorted(package_edges().items()):
        if src not in RANKS or dst not in RANKS:
            continue
        if RANKS[dst] > RANKS[src] and (src, dst) not in EXCEPTIONS:
            where = ", ".join(sorted(set(modules)))
            bad.append(f"{src} ({RANKS[src]}) imports {dst} ({RANKS[dst]}) in {where}")
    assert not bad, "imports that run back up the layers:\n" + "\n".join(bad)


def test_no_import_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for src, dst in package_edges():
        if (src, dst) not in EXCEPTIONS:
            graph[src].add(dst)
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                cycles.append(" → ".join([*path[path.index(nxt) :], nxt]))
            elif len(path) < 20:
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert not cycles, "package import cycles:\n" + "\n".join(sorted(set(cycles))[:20])


def modules() -> dict[str, Path]:
    """Every module of the product: dotted name → file (a package by its ``__init__``)."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def module_imports(path: Path, module: str, known: dict[str, Path]) -> set[str]:
    """The modules ``module`` imports, at every level (module, function, ``TYPE_CHECKING``):
    ``from pkg import sub`` is the submodule ``pkg.sub`` when there is one, else ``pkg``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree_of(path)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:
                sub = f"{name}.{alias.name}"
                names.add(sub if sub in known else name)
    resolved = set()
    for name in names:
        while name and name not in known:  # a name inside a module → that module
            name = name.rpartition(".")[0]
        if name and name != module:
            resolved.add(name)
    return resolved


#: packages whose modules still import each other in a circle, each with its reason
MODULE_CYCLE_EXCEPTIONS: dict[str, str] = {}


def module_cycles(package: str) -> set[str]:
    """The import circles between the modules of ``package`` (each once, as ``a → b → a``)."""
    known = modules()
    graph = {
        m: {d for d in module_imports(p, m, known) if package_of(d) == package}
        for m, p in known.items()
        if package_of(m) == package and m.count(".") >= 1
    }
    cycles: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt) :]
                first = cycle.index(min(cycle))  # one rotation per circle
                cycle = cycle[first:] + cycle[:first]
                cycles.add(" → ".join([*cycle, cycle[0]]))
            elif len(path) < 12:
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    return cycles


def packages() -> list[str]:
    return sorted({p for m in modules() if m.count(".") >= 1 and (p := package_of(m))})


def test_no_import_cycle_between_modules_of_a_package() -> None:
    """Inside a package (``catalog``, ``report``, ``store``, …) no module imports, directly or
    through others, a module that imports it back — at module or function level."""
    cycles = sorted(
        c for pkg in packages() if pkg not in MODULE_CYCLE_EXCEPTIONS for c in module_cycles(pkg)
    )
    assert not cycles, "module import cycles inside a package:\n" + "\n".join(cycles)


def test_module_cycle_exceptions_are_still_needed() -> None:
    """An exception goes once its circle is gone (and names a package that exists)."""
    for package in sorted(MODULE_CYCLE_EXCEPTIONS):
        assert package in packages(), f"{package}: no such package: drop its exception"
        assert module_cycles(package), f"{package}: no module cycle left: drop its exception"


#: modules of the product that are simulation (stand-ins for clouds, links, hosts) rather than
#: product, each with its reason; nothing else in the product may import them. Empty: the sim
#: backing is the separate package netfleet_sim (issue 24), reached only through importlib in
#: netfleet.cloud.backing and netfleet.plugins.
SIMULATION_EXCEPTIONS: dict[str, str] = {}


def test_product_imports_no_test_or_simulation_code() -> None:
    """Nothing in ``src/netfleet`` imports the tests (``tests``, ``conftest``, the ``*kit``
    helpers, ``tests/bucketsim.py``) nor a simulation module other than the known ones."""
    known = modules()
    test_modules = {p.stem for p in (SRC.parents[1] / "tests").glob("*.py")} | {"tests"}
    bad = []
    for module, path in known.items():
        for node in ast.walk(tree_of(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in test_modules or top in {"pytest", "hypothesis", "moto"}:
                    bad.append(f"{module} imports {name} (test code)")
                if top == "netfleet_sim":
                    bad.append(f"{module} imports {name} (simulation: load it lazily)")
        for dst in module_imports(path, module, known):
            leaf = dst.rpartition(".")[2]
            simulated = "sim" in leaf.split("_") or leaf.startswith(("sim", "simulat"))
            if simulated and dst not in SIMULATION_EXCEPTIONS:
                bad.append(f"{module} imports {dst} (simulation)")
    assert not bad, "the product imports test or simulation code:\n" + "\n".join(sorted(bad))


def test_no_start_up_trick_stands_in_for_the_library() -> None:
    """Start-up speed is not bought with a second library (issue 34): no module sets
    ``TYPE_CHECKING`` itself nor blanks a module in ``sys.modules`` (the library would take
    another path when it sees it)."""
    bad = []
    for module, path in modules().items():
        for node in ast.walk(tree_of(path)):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id == "TYPE_CHECKING":
                    bad.append(f"{module}:{node.lineno} sets TYPE_CHECKING (import typing's)")
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "sys.modules":
                    bad.append(f"{module}:{node.lineno} sets {ast.unparse(target)}")
    assert not bad, "\n".join(bad)


def test_no_string_reference_runs_up_the_layers() -> None:
    """A module named in a string (``"netfleet.cloud.aws.provider:AwsProvider"``, imported later by
    ``importlib``) is an import all the same: it may not run up the ranks either."""
    target = re.compile(r"^netfleet(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?$")
    bad = []
    for module, path in modules().items():
        src = package_of(module)
        for node in ast.walk(tree_of(path)):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if target.match(node.value):
                dst = package_of(node.value.partition(":")[0])
                if src in RANKS and dst in RANKS and RANKS[dst] > RANKS[src]:
                    bad.append(f"{module} names {node.value!r}")
    assert not bad, "string references that run up the layers:\n" + "\n".join(bad)


#: what a cloud's own package holds: everything else in ``netfleet.cloud`` is provider-neutral
CLOUD_PACKAGES = ("netfleet.cloud.aws",)
#: what provider-neutral cloud code may never import (a cloud's SDK, its package, its client)
CLOUD_SPECIFIC = ("boto3", "botocore", "netfleet.aws", *CLOUD_PACKAGES)


def cloud_imports_in_neutral_code(known: dict[str, Path]) -> list[str]:
    """``module imports name`` for every import of a cloud package, SDK or client factory by a
    provider-neutral ``netfleet.cloud`` module (any level: module, function, TYPE_CHECKING)."""
    bad = []
    for module, path in known.items():
        if not module.startswith("netfleet.cloud") or module.startswith(CLOUD_PACKAGES):
            continue
        for node in ast.walk(tree_of(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                base = node.module or ""
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                sdk = name.split(".")[0] in {"boto3", "botocore"}
                if sdk or (name.startswith(CLOUD_SPECIFIC[2:]) and name in known):
                    bad.append(f"{module} imports {name}")
    return sorted(set(bad))


def test_the_cloud_lifecycle_knows_no_cloud() -> None:
    """The lifecycle (``netfleet.cloud`` outside a cloud's own package: the seam, plan,
    bootstrap, release, the journal) reaches a cloud only through the seam (issue 24)."""
    bad = cloud_imports_in_neutral_code(modules())
    assert not bad, "provider-neutral cloud code imports a cloud:\n" + "\n".join(bad)


def test_the_neutral_cloud_check_sees_a_function_level_import(tmp_path: Path) -> None:
    """The check above could fail: a function-level import of the AWS package is found."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f() -> None:\n    from netfleet.cloud.aws import runs\n")
    known = {**modules(), "netfleet.cloud.probe": probe}
    assert cloud_imports_in_neutral_code(known) == [
        "netfleet.cloud.probe imports netfleet.cloud.aws",
        "netfleet.cloud.probe imports netfleet.cloud.aws.runs",
    ]


#: the modules that may reach a cloud's own teardown (destroy, reap, teardown_region) instead
#: of going through the one release path, ``netfleet.cloud.release.give_back``, with reasons
TEARDOWN_CALLERS: dict[str, str] = {
    "netfleet.cloud.aws.provider": "AwsCloud.release: the seam's release, which give_back calls",
    "netfleet.cloud.aws.acquire.provision": "Provisioner.release: tests and bench/ only",
    "netfleet.api._cloud": "cloud_reap without --delete: a look (reap(delete=False)), no release",
}


def test_one_release_path() -> None:
    """Every release goes through ``give_back`` (issue 24): outside the AWS release package,
    only the listed modules import its teardown (at any level)."""
    known = modules()
    bad = []
    for module, path in known.items():
        if module.startswith("netfleet.cloud.aws.release") or module in TEARDOWN_CALLERS:
            continue
        for dst in module_imports(path, module, known):
            if dst == "netfleet.cloud.aws.release.teardown":
                bad.append(f"{module} imports {dst}")
    assert not bad, "releases that bypass give_back:\n" + "\n".join(sorted(bad))
    for module in TEARDOWN_CALLERS:  # an entry goes when its import does
        imported = module_imports(known[module], module, known)
        assert "netfleet.cloud.aws.release.teardown" in imported, f"{module}: drop its entry"


#: what the CLI may import from netfleet: the facade, its own modules, the renderers and the
#: error types. Anything else is listed here with its reason — keep this short.
CLI_MAY_IMPORT = ("netfleet.api", "netfleet.cli", "netfleet.report", "netfleet.errors")
CLI_EXCEPTIONS: dict[str, str] = {
    "netfleet.__version__": "`netfleet --version` prints it",
    "netfleet.children": "main() reaps its own child processes before any command runs",
    "netfleet.text": "safe terminal text: user strings escaped before Rich prints them",
    "netfleet.units": "fmt_rate: the live rate on a run's progress line",
}


def cli_imports() -> dict[str, set[str]]:
    """netfleet module imported by the CLI → the CLI modules importing it."""
    found: dict[str, set[str]] = defaultdict(set)
    known = modules()
    for module, path in known.items():
        if module == "netfleet.cli" or module.startswith("netfleet.cli."):
            for name in module_imports(path, module, known):
                found[name].add(module)
    return found


def test_the_cli_goes_through_the_facade() -> None:
    """Every command is parse → one ``netfleet.api`` call → render (issue 22)."""
    bad = []
    for name, where in sorted(cli_imports().items()):
        if name == "netfleet":  # `from netfleet import api`: the names are checked one by one
            continue
        allowed = name.startswith(tuple(p + "." for p in CLI_MAY_IMPORT)) or name in CLI_MAY_IMPORT
        if not allowed and name not in CLI_EXCEPTIONS:
            bad.append(f"{name} (in {', '.join(sorted(where))})")
    assert not bad, "the CLI imports past netfleet.api:\n" + "\n".join(bad)


def test_the_cli_import_list_fits_one_screen() -> None:
    names = [n for n in cli_imports() if n != "netfleet"]
    assert len(names) <= 25, sorted(names)


def loaded_modules(code: str) -> set[str]:
    """Every module in ``sys.modules`` after ``code`` ran in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.splitlines())


def loaded_after(code: str) -> set[str]:
    return {name.split(".")[0] for name in loaded_modules(code)}


HEAVY = {"duckdb", "numpy", "ruptures", "asyncssh", "boto3", "matplotlib", "scipy", "pyarrow"}


def test_catalog_import_does_not_load_ssh() -> None:
    assert "asyncssh" not in loaded_after("import netfleet.catalog")


def test_catalog_schemas_load_no_engine() -> None:
    """The tables' schemas without the row code: a process that only reads or writes catalog
    tables (an import by reference's own process) loads neither the engines nor pydantic."""
    loaded = loaded_modules("import netfleet.catalog.schemas")
    assert "pyarrow" in {name.split(".")[0] for name in loaded}
    assert not {n for n in loaded if n.startswith(("netfleet.engines", "pydantic"))}


def test_version_loads_no_heavy_library() -> None:
    code = (
        "import sys\nsys.argv = ['netfleet', '--version']\nfrom netfleet.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert not (loaded_after(code) & HEAVY)


def test_ruptures_loads_when_a_series_is_segmented_not_before() -> None:
    """The credit calculator from given numbers and a scaled lab's run summary import the
    analysis package; ruptures and SciPy (~1.5 s) load only when a series is segmented."""
    calc = (
        "from netfleet import api\n"
        "assert api.calc(baseline='0.75gbit', peak='10gbit', bucket='2700gbit')\n"
        "import netfleet.analysis, netfleet.report.labscale\n"
    )
    assert not (loaded_after(calc) & {"ruptures", "scipy"})
    segmented = (
        "import numpy as np\nfrom netfleet.analysis.series import Series\n"
        "from netfleet.analysis.segments import segment\n"
        "rates = np.r_[np.full(60, 5e9), np.full(120, 1e9)]\n"
        "seg = segment(Series.from_rates(rates * np.exp(np.sin(np.arange(180.0)) / 100)))\n"
        "assert seg.classification == 'burst-then-baseline', seg.classification\n"
    )
    assert "ruptures" in loaded_after(segmented)


def test_help_loads_no_heavy_library() -> None:
    """``netfleet --help`` and every command's ``--help`` (issue 27.9: ``run --help`` imported
    the runner, the engines and pydantic to print its options)."""
    from netfleet.cli.main import LAZY_COMMANDS

    helps = [["--help"]] + [[name, "--help"] for name in LAZY_COMMANDS]
    code = "import contextlib, io, sys\nfrom netfleet.cli.main import main\n" + "".join(
        f"sys.argv = ['netfleet', *{args!r}]\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        for args in helps
    )
    modules = loaded_modules(code)
    heavy = {m.split(".")[0] for m in modules} & (HEAVY | {"pydantic", "botocore", "yaml"})
    assert not heavy, sorted(heavy)
    # typer's Rich help (rich.markdown → markdown-it, rich.syntax → pygments) costs 5-7× the
    # start-up floor: command help is plain click help, as the root's is
    rich_help = {"typer.rich_utils", "rich.markdown", "markdown_it", "pygments"} & modules
    assert not rich_help, sorted(rich_help)
    # the library behind the facade is imported when a command runs, not to describe it
    deep = {
        m
        for m in modules
        if m.startswith("netfleet.")
        and not m.startswith(
            (
                "netfleet.api",
                "netfleet.cli",
                "netfleet.report",
                "netfleet.errors",
                "netfleet.text",
                "netfleet.tabular",
                "netfleet.plain",  # (Tabular's base class)
                "netfleet.units",
                "netfleet.children",
            )
        )
    }
    assert not deep, sorted(deep)


NETFLEET = str(Path(sys.executable).parent / "netfleet")


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_show_completion_prints_a_script(shell: str) -> None:
    # Typer detects the user's shell from the parent process; its test switch takes the shell
    # from the command line instead, so both scripts are checked from here
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    out = subprocess.run(
        [NETFLEET, "--show-completion", shell], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert "_NETFLEET_COMPLETE" in out and f"complete_{shell}" in out


def test_completion_completes_a_command_name() -> None:
    env = {"_NETFLEET_COMPLETE": "complete_bash", "COMP_WORDS": "netfleet pl", "COMP_CWORD": "1"}
    out = subprocess.run(
        [NETFLEET], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env}
    ).stdout
    assert out.split() == ["plan"]


def test_every_lazy_command_loads_under_its_name() -> None:
    from netfleet.cli.main import LAZY_COMMANDS, load_command

    for name in LAZY_COMMANDS:
        cmd = load_command(name)
        assert cmd.name == name and cmd.help, name


#: AWS's own vocabulary, as a provider-neutral module must not write it (string constants):
#: resource id formats (``vpc-``, ``subnet-``, ``i-`` … in a pattern), ARNs, EC2 ``Filters``
#: (``tag:KEY``), and the files AWS's package ships (``cloud/aws/data``)
AWS_VOCABULARY = {
    "an AWS id format": re.compile(r"\b(vpc|subnet|sg|ami|igw|rtb|eni)(-[\[(\\]|\|)"),
    "an ARN": re.compile(r"arn:aws"),
    "an EC2 filter": re.compile(r"^tag:|^tag-key$"),
    "an AWS file": re.compile(r"cloud/aws|aws/data"),
}
#: neutral modules still holding some of it, each with its reason (an entry goes with its words)
AWS_VOCABULARY_EXCEPTIONS: dict[str, str] = {}


def aws_vocabulary(path: Path) -> list[str]:
    """What of :data:`AWS_VOCABULARY` a module's string constants (docstrings aside) and
    path joins (``… / "aws" / …``) name."""
    tree = tree_of(path)
    docs = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        sides = (node.left, node.right) if isinstance(node, ast.BinOp) else ()
        if any(isinstance(s, ast.Constant) and s.value == "aws" for s in sides):
            found.append('a path through "aws"')
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found += [what for what, rx in AWS_VOCABULARY.items() if rx.search(node.value)]
    return sorted(set(found))


def neutral_modules() -> dict[str, Path]:
    """The provider-neutral cloud code and the base modules every layer reads (rank 0 but the
    boto3 client factory ``netfleet.aws``)."""
    base = {n for n, rank in RANKS.items() if rank == 0 and n != "aws"}
    return {
        m: p
        for m, p in modules().items()
        if (m.startswith("netfleet.cloud") and not m.startswith(CLOUD_PACKAGES))
        or package_of(m) in base
    }


def test_neutral_modules_name_no_aws_ids_filters_or_files() -> None:
    """AWS specifics live behind the seam (issue 35): EC2 tag filters in
    ``netfleet.cloud.aws.filters`` (not ``cloud/owner.py``), the shipped price file in
    ``netfleet.cloud.aws.plan.prices`` (not ``pricetable.py``), the id formats, ARNs and region
    names the intent journal's replay checks in ``netfleet.cloud.aws.journal`` (not
    ``cloud/journal.py``)."""
    bad = [
        f"{module} names {', '.join(words)}"
        for module, path in sorted(neutral_modules().items())
        if (words := aws_vocabulary(path)) and module not in AWS_VOCABULARY_EXCEPTIONS
    ]
    assert not bad, "provider-neutral modules name AWS specifics:\n" + "\n".join(bad)
    for module in AWS_VOCABULARY_EXCEPTIONS:  # an entry goes when its words do
        assert aws_vocabulary(neutral_modules()[module]), f"{module}: drop its exception"


def test_the_aws_vocabulary_check_sees_a_filter_and_the_price_file(tmp_path: Path) -> None:
    """The check above could fail: the old ``owner.filters`` and ``pricetable.SHIPPED``."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from pathlib import Path\n"
        'SHIPPED = Path(__file__).parent / "cloud" / "aws" / "data" / "prices.json"\n'
        "def filters(c):\n"
        '    """EC2 Describe filters."""\n'
        '    return [{"Name": f"tag:{c}", "Values": [c]}]\n'
        'ID_RE = r"^(vpc|subnet|sg|i)-[0-9a-f]+$"\n'
    )
    assert aws_vocabulary(probe) == ['a path through "aws"', "an AWS id format", "an EC2 filter"]

"""The simulation never ships in the product (issue 24): netfleet's wheel holds no
``netfleet_sim``, the product imports it only lazily (``backing: sim``, ``NETFLEET_PLUGINS``),
and without it both say what is missing instead of failing somewhere deep."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UV = Path("/root/.local/share/netfleet/uv/bin/uv")


def _build(where: Path, out: Path) -> Path:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_PYTHON": sys.executable}
    subprocess.run(
        [str(UV), "build", "--wheel", "--offline", "-o", str(out)],
        cwd=where,
        env=env,
        check=True,
        capture_output=True,
    )
    return next(out.glob("*.whl"))


@pytest.mark.skipif(not UV.exists(), reason="uv (scripts/bootstrap.sh) builds the wheels")
def test_product_wheel_holds_no_simulation(tmp_path: Path) -> None:
    product = _build(ROOT, tmp_path / "product")
    names = zipfile.ZipFile(product).namelist()
    assert any(n.startswith("netfleet/cloud/aws/provider.py") for n in names)
    assert not [n for n in names if n.startswith("netfleet_sim/")]
    # the modules that moved out are gone from the product, not copied
    for gone in ("sim.py", "simlab.py", "fargate_sim.py"):
        assert f"netfleet/cloud/{gone}" not in names
    sim = _build(ROOT / "packaging" / "netfleet-sim", tmp_path / "sim")
    sim_names = zipfile.ZipFile(sim).namelist()
    assert "netfleet_sim/labs.py" in sim_names and "netfleet_sim/faults.py" in sim_names
    assert not [n for n in sim_names if n.startswith("netfleet/")]


def test_product_never_imports_the_sim_package_statically() -> None:
    """Only netfleet.cloud.backing and netfleet.plugins name it, through importlib."""
    bad = []
    for path in (ROOT / "src" / "netfleet").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad += [f"{path}: {n}" for n in names if n.split(".")[0] == "netfleet_sim"]
    assert not bad, bad


WITHOUT_SIM = "import sys\nsys.modules['netfleet_sim'] = None  # as if not installed\n"


def _without_sim(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SIM + code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )


def test_sim_backing_without_the_package_is_a_clear_error() -> None:
    code = (
        "from netfleet.cloud import backing\nfrom netfleet.errors import EnvironmentProblem\n"
        "try:\n    backing.sim('instances')\nexcept EnvironmentProblem as e:\n"
        "    print('ERR', e, '|', e.hint)\n"
    )
    out = _without_sim(code)
    assert out.returncode == 0, out.stderr
    assert "backing: sim needs the package netfleet_sim" in out.stdout
    assert "backing: ssh" in out.stdout


def test_destroy_needs_the_package_only_for_a_campaign_with_sim_labs(tmp_path: Path) -> None:
    (tmp_path / "nf-a" / "sim").mkdir(parents=True)
    (tmp_path / "nf-b").mkdir()
    code = (
        "from pathlib import Path\nfrom netfleet.cloud import backing\n"
        "from netfleet.errors import EnvironmentProblem\n"
        f"root = Path({str(tmp_path)!r})\n"
        "print('b', backing.sim_labs(root, 'nf-b'))\n"
        "print('all', backing.sim_labs(root))\n"  # the sweep skips what it cannot load
        "try:\n    backing.sim_labs(root, 'nf-a')\nexcept EnvironmentProblem as e:\n"
        "    print('a ERR', e)\n"
    )
    out = _without_sim(code)
    assert out.returncode == 0, out.stderr
    assert "b None" in out.stdout and "all None" in out.stdout
    assert "a ERR backing: sim needs the package netfleet_sim" in out.stdout
    # with the package (the source tree), the same directory loads it
    from netfleet.cloud import backing

    mod = backing.sim_labs(tmp_path, "nf-a")
    assert mod is not None and mod.__name__ == "netfleet_sim.labs"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("os", "only modules of netfleet_sim are loaded"),
        ("netfleet_sim.faults", "which is not installed"),
    ],
)
def test_plugins_env_loads_only_the_sim_package(value: str, message: str) -> None:
    code = (
        "from netfleet import plugins\nfrom netfleet.errors import EnvironmentProblem\n"
        "try:\n    plugins.step('x')\nexcept EnvironmentProblem as e:\n    print('ERR', e)\n"
    )
    out = _without_sim(code, NETFLEET_PLUGINS=value)
    assert out.returncode == 0, out.stderr
    assert message in out.stdout, out.stdout


def test_a_kill_point_kills_only_with_the_plugin_loaded() -> None:
    code = "from netfleet.cloud import faults\nfaults.point('after:vpc')\nprint('alive')\n"
    env = {k: v for k, v in os.environ.items() if k != "NETFLEET_PLUGINS"}
    base = [sys.executable, "-c", code]
    alone = subprocess.run(
        base, env={**env, "NETFLEET_FAULT_AT": "after:vpc"}, capture_output=True, text=True
    )
    assert alone.returncode == 0 and "alive" in alone.stdout  # a seam only: nothing happens
    plugged = {**env, "NETFLEET_FAULT_AT": "after:vpc", "NETFLEET_PLUGINS": "netfleet_sim.faults"}
    killed = subprocess.run(base, env=plugged, capture_output=True, text=True)
    assert killed.returncode == -9 and "alive" not in killed.stdout

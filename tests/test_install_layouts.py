"""The built wheel installed the ways operators install it, each finding the model bundle."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
# What a wheel is built from; a copy keeps build/ and *.egg-info out of the checkout.
SOURCES = ("pyproject.toml", "README.md", "memory_console", "models")
# Where the wheel's own files go under a prefix (pip --prefix, --user): lib/pythonX.Y/...
SITE_TAIL = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))


def test_listed_packages_are_the_package_tree() -> None:
    """pyproject.toml lists the packages (automatic discovery cannot map models/): every
    package of the tree is listed, and the model bundle is one of them."""
    config = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]
    tree = {
        ".".join(init.parent.relative_to(REPOSITORY).parts)
        for init in (REPOSITORY / "memory_console").rglob("__init__.py")
    }
    assert set(config["packages"]) == tree | {"memory_console.models"}
    assert config["package-dir"] == {"memory_console.models": "models"}
    assert (REPOSITORY / "models" / "__init__.py").is_file()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once per session without network (no build isolation)."""
    source = copy_sources(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    pip(sys.executable, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source))
    (built,) = out.glob("memory_console-*.whl")
    return built


def copy_sources(where: Path) -> Path:
    """The files a wheel is built from, copied to where."""
    where.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        origin = REPOSITORY / name
        if origin.is_dir():
            shutil.copytree(origin, where / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(origin, where / name)
    return where


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that points at this checkout or another manifest."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONUSERBASE", "MEMORY_CONSOLE_MODEL_MANIFEST", "PIP_USER")
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def pip(python: str | Path, *args: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", *args],
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def make_venv(where: Path) -> Path:
    """A venv that sees the dependencies and pip of the environment running the suite (they
    are not installed again); its python.

    `--system-site-packages` shows only the base interpreter's site-packages, which hold
    nothing when the suite runs in a venv of its own (README's command in a fresh venv) or
    from a `--user` install; so the new venv also reads every site directory this process
    reads, through a .pth file, after its own."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(where)],
        check=True,
        timeout=120,
    )
    python = where / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(own) / "suite-environment.pth").write_text("\n".join(site_directories()) + "\n")
    return python


def site_directories() -> list[str]:
    """The site directories of the environment running the suite (its venv's, the user's,
    the system's): where its dependencies and pip are installed, whichever way that was."""
    found = [*site.getsitepackages(), site.getusersitepackages()]
    return [entry for entry in dict.fromkeys(found) if Path(entry).is_dir()]


def plain(root: Path, wheel: Path) -> tuple[Path, dict[str, str], Path]:
    python = make_venv(root / "venv")
    pip(python, "install", "--no-deps", str(wheel))
    return python, clean_env(), root / "venv" / "bin" / "memory-console"


def prefix(root: Path, wheel: Path) -> tuple[Path, dict[str, str], Path]:
    python = make_venv(root / "venv")
    pip(python, "install", "--no-deps", "--prefix", str(root / "prefix"), str(wheel))
    env = clean_env(PYTHONPATH=str(root / "prefix" / SITE_TAIL))
    return python, env, root / "prefix" / "bin" / "memory-console"


def user(root: Path, wheel: Path) -> tuple[Path, dict[str, str], Path]:
    python = make_venv(root / "venv")
    env = clean_env(PYTHONUSERBASE=str(root / "userbase"))
    pip(python, "install", "--no-deps", "--user", str(wheel), env=env)
    return python, env, root / "userbase" / "bin" / "memory-console"


def target(root: Path, wheel: Path) -> tuple[Path, dict[str, str], Path]:
    python = make_venv(root / "venv")
    pip(python, "install", "--no-deps", "--target", str(root / "target"), str(wheel))
    env = clean_env(PYTHONPATH=str(root / "target"))
    return python, env, root / "target" / "bin" / "memory-console"


def editable(root: Path, wheel: Path) -> tuple[Path, dict[str, str], Path]:
    """`pip install -e` of a copy of the checkout (the wheel's own sources)."""
    source = copy_sources(root / "checkout")
    python = make_venv(root / "venv")
    pip(python, "install", "--no-deps", "--no-build-isolation", "-e", str(source))
    return python, clean_env(), root / "venv" / "bin" / "memory-console"


Layout = Callable[[Path, Path], tuple[Path, dict[str, str], Path]]
LAYOUTS: dict[str, Layout] = {
    "venv": plain,
    "prefix": prefix,
    "user": user,
    "target": target,
    "editable": editable,
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_finds_the_bundle_and_searches(layout: str, wheel: Path, tmp_path: Path) -> None:
    python, env, script = LAYOUTS[layout](tmp_path, wheel)
    install_root = tmp_path / ("checkout" if layout == "editable" else "")

    def run(*args: str) -> str:
        done = subprocess.run(
            [str(script), *args], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("--version").strip().startswith("memory-console ")
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import memory_console\n"
            "from memory_console.embed.embedder import default_manifest_path\n"
            "print(memory_console.__file__)\n"
            "print(default_manifest_path())",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    package, manifest = (Path(line) for line in found)
    # This install's own package and bundle, not the checkout the tests run from.
    assert package.is_relative_to(install_root), package
    assert manifest.is_relative_to(install_root), manifest
    assert manifest.is_file()

    db = str(tmp_path / "tiny.db")
    run("--db", db, "demo", "--count", "30")
    run("--db", db, "reindex")
    found_hits = json.loads(
        run("--db", db, "search", "--json", "--mode", "semantic", "--k", "1", "dark editor theme")
    )["hits"]
    assert found_hits and found_hits[0]["semantic_rank"] == 1
    assert "dark" in found_hits[0]["title"].lower()


def test_ci_runs_readme_s_check_and_test_command() -> None:
    """CI runs what the README gives a newcomer, lints first: one line, the same in both."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = readme.split("```sh\n")[1:]
    commands = [block.split("```")[0].strip() for block in blocks]
    (check,) = [command for command in commands if command.endswith("&& pytest")]
    assert "ruff check ." in check and "ruff format --check ." in check and "mypy" in check
    ci = (root / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == check

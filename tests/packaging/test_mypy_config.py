"""The type check (``make lint``'s mypy, configured in pyproject.toml) still runs after a
non-editable install from the checkout: ``pip install ./clients/python``, as a bot author
installs the client, leaves a copy of its packages in ``clients/python/build/lib``, which
mypy's search of ``clients/python`` must skip (a second ``mandala`` stops it at once)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_skips_the_copy_a_pip_build_leaves(tmp_path: Path) -> None:
    client = tmp_path / "clients" / "python"
    for where in (client, client / "build" / "lib"):
        (where / "mandala").mkdir(parents=True)
        (where / "mandala" / "__init__.py").write_text('"""A package."""\n\nN: int = 1\n', encoding="utf-8")
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-incremental",
                                      "--cache-dir", str(tmp_path / "cache"), str(client)])
    assert (status, stderr) == (0, ""), stdout
    assert "Success: no issues found in 1 source file" in stdout

"""docs/site/howto.md followed to the letter (issue 21): its blocks applied to a copy of the
package, the files they touch counted (a policy with a kernel: 3, a trace format: 2), and the
recipe's own test run against the copy in a fresh interpreter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOWTO = ROOT / "docs/site/howto.md"
STEP = re.compile(r'<!-- howto: (new|after|before) (\S+)(?: "([^"\n]*)")? -->\n```python\n(.*?)```',
                  re.S)


def _recipes() -> dict[str, list[tuple]]:
    text = HOWTO.read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {p.split("\n", 1)[0]: STEP.findall(p) for p in parts}


def _apply(steps, root: Path) -> set[str]:
    touched = set()
    for how, rel, anchor, code in steps:
        target = root / rel
        touched.add(rel)
        if how == "new":
            assert not target.exists(), f"{rel} exists already"
            target.write_text(code, encoding="utf-8")
            continue
        text = target.read_text(encoding="utf-8")
        assert text.count(anchor + "\n") == 1, f"anchor not found once in {rel}: {anchor!r}"
        new = (anchor + "\n" + code) if how == "after" else (code + anchor + "\n")
        target.write_text(text.replace(anchor + "\n", new, 1), encoding="utf-8")
    return touched


@pytest.mark.parametrize("title, files", [("A policy with a compiled kernel (three files)", 3),
                                          ("A trace format (two files)", 2)])
def test_the_howto_works_as_written(tmp_path, title, files):
    steps = _recipes()[title]
    assert steps, f"no steps under {title!r}"
    shutil.copytree(ROOT / "paging", tmp_path / "paging",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests/unit").mkdir(parents=True)
    touched = _apply(steps, tmp_path)
    assert len(touched) == files, sorted(touched)
    tests = [rel for rel in touched if rel.startswith("tests/")]
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "--rootdir", str(tmp_path), *tests],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"{len(tests)} passed" in out.stdout

"""Sphinx configuration of the documentation site (``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

project = "paging"
extensions = ["sphinx.ext.autodoc", "numpydoc", "myst_nb", "cli_reference", "generated"]
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
nb_execution_mode = "off"  # notebooks are executed by tests/unit/test_notebook.py, not here
myst_heading_anchors = 3
exclude_patterns = ["_build"]
html_theme = "alabaster"
suppress_warnings = ["myst.header"]

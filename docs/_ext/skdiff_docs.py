"""Sphinx extension of the skdiff documentation.

* **intersphinx offline**: a project whose inventory is neither in Sphinx's cache nor
  reachable is dropped from ``intersphinx_mapping`` for this build, with an info line, so a
  machine without network builds with warnings as errors (links to that project then render
  as plain names). ``SKDIFF_DOCS_OFFLINE=1`` skips the network probe.
* **API coverage**: every name in the ``__all__`` of the documented modules must appear in
  ``docs/api/index.rst`` and every name listed there must be public; a difference is a
  warning (an error under ``-W``).
* **docstring check**: every parameter, return value and fitted attribute of the public API
  needs a sentence (:mod:`docstring_check`); a gap outside the list of known gaps is a
  warning, and so is a listed gap that has been fixed.
* **benchmark tables**: the ``benchmark`` directive (:mod:`skdiff_benchmarks`).
* **optional pages**: a toctree entry of :data:`OPTIONAL_PAGES` whose page does not exist
  is left out of the toctree (``docs/scaling.md``).
* ``reset_torch``: sphinx-gallery's per-example reset (one torch thread, as the examples
  assume on a shared machine).
"""

from __future__ import annotations

import importlib
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

from sphinx.util import logging

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
API_MODULES = ("skdiff", "skdiff.callbacks", "skdiff.datasets", "skdiff.bayes_opt", "skdiff.nn",
               "skdiff.diffusion")


#: toctree entries (``/docname`` lines) kept only when their page exists
OPTIONAL_PAGES = {"user_guide/index": ["scaling"]}


def _drop_missing_pages(app, docname, source):
    for page in OPTIONAL_PAGES.get(docname, []):
        if not any((Path(app.srcdir) / f"{page}{ext}").is_file() for ext in (".md", ".rst")):
            source[0] = "\n".join(line for line in source[0].splitlines()
                                  if line.strip() != f"/{page}") + "\n"


def reset_torch(gallery_conf, fname):
    """Before each gallery example: one torch thread (the examples are sized for it)."""
    import torch

    torch.set_num_threads(1)


# -- intersphinx -----------------------------------------------------------------------------
def _reachable(url, timeout=3.0):
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def _prune_intersphinx(app, config):
    cache = Path(app.doctreedir) / "__intersphinx_cache__"
    offline = os.environ.get("SKDIFF_DOCS_OFFLINE", "") not in ("", "0")
    kept = {}
    for name, value in config.intersphinx_mapping.items():
        url = value[0] if isinstance(value, (tuple, list)) else value
        if (cache / f"{name}_objects.inv").is_file() or (not offline and _reachable(url)):
            kept[name] = value
        else:
            logger.info(f"intersphinx: {name} ({url}) is neither cached nor reachable; "
                        "links to it render as plain names in this build")
    config.intersphinx_mapping = kept


# -- API coverage ----------------------------------------------------------------------------
def listed_names(rst_text):
    """``{module: {names}}`` listed by the autosummary directives of an rst page."""
    listed, module, in_summary = {}, None, False
    for line in rst_text.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module, in_summary = m.group(1), False
        elif line.startswith(".. autosummary::"):
            in_summary = True
        elif in_summary and (m := re.match(r"   ([A-Za-z_]\w*)\s*$", line)):
            listed.setdefault(module, set()).add(m.group(1))
        elif line and not line.startswith(" "):
            in_summary = False
    return listed


def api_coverage_problems(rst_path=HERE.parent / "api" / "index.rst"):
    """Sentences naming public names missing from the API page, and listed private names."""
    listed = listed_names(Path(rst_path).read_text())
    problems = []
    for modname in API_MODULES:
        public = set(importlib.import_module(modname).__all__) - {"__version__"}
        shown = listed.get(modname, set())
        problems += [f"{modname}.{n} is public (in __all__) but not on the API page "
                     "docs/api/index.rst" for n in sorted(public - shown)]
        problems += [f"{modname}.{n} is on the API page but not in {modname}.__all__"
                     for n in sorted(shown - public)]
    return problems


def _check_api(app):
    for problem in api_coverage_problems():
        logger.warning(problem, type="skdiff", subtype="api")
    from docstring_check import known_gaps, public_gaps

    found, known = set(public_gaps(API_MODULES)), known_gaps()
    for gap in sorted(found - known):
        logger.warning(f"docstring gap: {gap} (every parameter, return value and attribute "
                       "needs a sentence)", type="skdiff", subtype="docstring")
    for gap in sorted(known - found):
        logger.warning(f"docs/_ext/docstring_gaps.txt lists a gap that no longer exists: "
                       f"{gap}; remove the line", type="skdiff", subtype="docstring")


def setup(app):
    from skdiff_benchmarks import setup as setup_benchmarks

    app.connect("config-inited", _prune_intersphinx, priority=100)
    app.connect("builder-inited", _check_api)
    app.connect("source-read", _drop_missing_pages)
    setup_benchmarks(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx configuration of the skdiff documentation.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W -b html -D plot_gallery=0 docs docs/_build/html   # gallery not run
    python -m sphinx -W -b html docs docs/_build/html                     # gallery executed

Everything under ``docs/_build``, ``docs/api/generated``, ``docs/auto_examples`` and
``docs/gen_modules`` is generated and git-ignored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(ROOT))  # the skdiff of this checkout, installed or not

# The gallery's examples train small networks; one thread each keeps them from fighting
# over a shared machine's cores (and is what the examples themselves assume).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import skdiff  # noqa: E402

project = "skdiff"
author = "The skdiff developers"
copyright = "The skdiff developers"  # noqa: A001
release = skdiff.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "skdiff_docs",  # docs/_ext: benchmark tables, API coverage, docstring checks, intersphinx
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "**/*.codeobj.json"]
default_role = "py:obj"  # `name` in a docstring links to the object
pygments_style = "sphinx"

# -- MyST (Markdown pages) -----------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3

# -- autodoc, autosummary, numpydoc --------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "groupwise"}
autodoc_typehints = "none"  # the numpydoc sections carry the types
numpydoc_show_class_members = False  # autosummary's class template lists the methods
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = True
# Types link through py roles only: an unresolved py reference renders as plain text, while
# numpydoc's default :ref:/:term: links (bool, array_like, ...) would be errors in a build
# whose inventories are unavailable.
numpydoc_xref_aliases = {
    # numpydoc's defaults name the inventory ("python:int"), which renders as such when the
    # inventory is not loaded; plain names resolve through any loaded inventory
    "None": ":data:`None`",
    "True": ":data:`True`",
    "False": ":data:`False`",
    "bool": "bool",
    "boolean": "bool",
    "int": "int",
    "float": "float",
    "str": "str",
    "string": "str",
    "list": "list",
    "tuple": "tuple",
    "dict": "dict",
    "callable": ":func:`callable`",
    "iterable": "collections.abc.Iterable",
    "sequence": "collections.abc.Sequence",
    "generator": "collections.abc.Generator",
    "scalar": "numpy.generic",
    "array": "numpy.ndarray",
    "ndarray": "numpy.ndarray",
    "array-like": "numpy.typing.ArrayLike",
    "array_like": "numpy.typing.ArrayLike",
    "sparse matrix": "scipy.sparse.spmatrix",
    "RandomState": "numpy.random.RandomState",
    "Graph": "skdiff.Graph",
    "Pipeline": "sklearn.pipeline.Pipeline",
    "Bunch": "sklearn.utils.Bunch",
    "NoiseSchedule": "skdiff.diffusion.NoiseSchedule",
    "PriorConfig": "skdiff.diffusion.PriorConfig",
    "torch.device": "torch.device",
    "torch.Tensor": "torch.Tensor",
    "Tensor": "torch.Tensor",
}
numpydoc_xref_ignore = {"of", "shape", "default", "or", "optional", "in", "and", "with",
                        "n_samples", "n_features", "n_classes", "n_outputs", "n_rows",
                        "n_nodes", "n", "L", "C", "k", "d", "D", "N", "T", "path",
                        "path-like", "object", "estimator", "instance", "function", "type"}

# -- intersphinx ---------------------------------------------------------------------------
# Inventories are fetched once and kept in Sphinx's cache in the build's doctree folder for
# good (cache limit -1; ``rm -rf docs/_build`` refreshes them). A project whose inventory is
# neither cached nor reachable is left out of the mapping for that build (see
# docs/_ext/skdiff_docs.py: links to it render as plain names) instead of failing a
# warnings-as-errors build on a machine without network. SKDIFF_DOCS_OFFLINE=1 skips the
# reachability probe altogether.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
    "torch": ("https://docs.pytorch.org/docs/stable", None),
    "skorch": ("https://skorch.readthedocs.io/en/stable", None),
}
intersphinx_cache_limit = -1
intersphinx_timeout = 10

# -- sphinx-gallery ------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/(plot_\w+|quickstart)\.py$",  # every example is executed
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "doc_module": ("skdiff",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"skdiff": None},
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib", "skdiff_docs.reset_torch"),
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
}

# -- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skdiff {release}"
html_static_path = ["_static"]
html_css_files = ["skdiff.css"]
# the page's table of contents lists methods by their own name (fit(), not Class.fit())
toc_object_entries_show_parents = "hide"
html_show_sourcelink = False
html_theme_options = {
    "github_url": "https://github.com/skdiff-dev/skdiff",
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
    "logo": {"text": "skdiff"},
}
html_sidebars = {"index": [], "getting_started": []}
html_context = {"default_mode": "light"}

"""Every parameter, return value and fitted attribute of the public API has a sentence.

Run on its own to list the gaps::

    python docs/_ext/docstring_check.py            # every gap, one per line
    python docs/_ext/docstring_check.py --new      # only gaps not in docstring_gaps.txt

The Sphinx build (``skdiff_docs``) runs the same check: a gap that is not listed in
``docstring_gaps.txt`` is a warning (an error with ``-W``), and so is a listed gap that no
longer exists, so the list only shrinks.

Checked objects: every name in the ``__all__`` of the documented modules, and the public
methods and properties that skdiff itself defines on those classes (methods inherited from
scikit-learn, skorch or torch are documented there). numpydoc's validator supplies
``GL08`` (no docstring), ``PR01`` (a parameter not documented), ``PR02`` (a documented
parameter that does not exist), ``PR07`` (a parameter without description) and ``RT03`` (a
return value without description); ``AT01`` (an attribute without description) is checked
here, since numpydoc does not validate the Attributes section.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

from numpydoc.docscrape import ClassDoc
from numpydoc.validate import validate

HERE = Path(__file__).resolve().parent
KNOWN_GAPS = HERE / "docstring_gaps.txt"
CODES = ("GL08", "PR01", "PR02", "PR07", "RT03")


def _own_members(cls):
    """Public methods and properties defined by skdiff on ``cls`` or its skdiff bases.

    Overrides of a method that a base from another library defines (``forward`` and
    ``extra_repr`` of a torch module, the hooks of a skorch callback) are left out: their
    contract is documented by that library."""
    names = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owners = [k for k in cls.__mro__ if name in k.__dict__]
        if not owners or any(not k.__module__.startswith("skdiff") for k in owners):
            continue
        owner = owners[0]
        member = owner.__dict__[name]
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            names.append(name)
    return names


def _attribute_gaps(name, cls):
    gaps = []
    for attr in ClassDoc(cls, config={"show_class_members": False})["Attributes"]:
        if not "".join(attr.desc).strip():
            gaps.append(f"{name} AT01 attribute {attr.name!r} has no description")
    return gaps


def object_gaps(name):
    """The gaps of one object given by its import path."""
    gaps = []
    for code, message in validate(name)["errors"]:
        if code not in CODES:
            continue
        listed = re.search(r"\{(.*)\}", message)  # PR01/PR02 name a set of parameters
        if listed is None:
            gaps.append(f"{name} {code} {message}")
            continue
        for param in sorted(p.strip().strip("'") for p in listed.group(1).split(",")):
            what = "not documented" if code == "PR01" else "documented but not a parameter"
            gaps.append(f"{name} {code} parameter {param!r} {what}")
    return gaps


def public_gaps(modules):
    """Every gap of the public API of ``modules``, as sorted one-line strings."""
    gaps = set()
    for modname in modules:
        module = importlib.import_module(modname)
        for public in module.__all__:
            if public == "__version__":
                continue
            obj = getattr(module, public)
            name = f"{modname}.{public}"
            if not callable(obj):
                continue
            gaps.update(object_gaps(name))
            if inspect.isclass(obj):
                gaps.update(_attribute_gaps(name, obj))
                for member in _own_members(obj):
                    gaps.update(object_gaps(f"{name}.{member}"))
    return sorted(gaps)


def known_gaps():
    """The gaps listed in ``docstring_gaps.txt`` (comments and blank lines ignored)."""
    if not KNOWN_GAPS.is_file():
        return set()
    lines = (line.strip() for line in KNOWN_GAPS.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def main(argv):
    sys.path.insert(0, str(HERE.parents[1]))
    from skdiff_docs import API_MODULES

    gaps = public_gaps(API_MODULES)
    if "--new" in argv:
        gaps = sorted(set(gaps) - known_gaps())
    print("\n".join(gaps))
    print(f"{len(gaps)} gap(s)", file=sys.stderr)
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main(sys.argv[1:]))

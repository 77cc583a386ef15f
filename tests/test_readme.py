"""Every Python snippet of the README and of the getting-started page runs as written.

Each ```python block is executed on its own, in a fresh namespace, from a temporary working
directory (a snippet must not depend on another, nor write into the checkout). A snippet
that fetches real data (``fetch_planetoid``, ``fetch_ett``) runs against the data home the
suite finds (``tests/conftest.py``) and skips, saying how to get the data, when it is
absent.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "getting_started.md"]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
FETCHERS = {"fetch_planetoid": "cora_home", "fetch_ett": "ett_home"}


def snippets():
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            line = text[: match.start()].count("\n") + 2
            found.append(pytest.param(match.group(1), id=f"{page.name}:{line}"))
    return found


def test_the_pages_have_snippets():
    counts = {page.name: len(FENCE.findall(page.read_text())) for page in PAGES}
    assert counts["README.md"] >= 7, counts
    assert counts["getting_started.md"] >= 3, counts


@pytest.mark.parametrize("code", snippets())
def test_snippet_runs(code, request, monkeypatch, tmp_path):
    for fetcher, fixture in FETCHERS.items():
        if f"{fetcher}(" in code:
            monkeypatch.setenv("SKDIFF_DATA", str(request.getfixturevalue(fixture)))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<snippet>", "exec"), {"__name__": "__snippet__"})
    assert list(tmp_path.iterdir()) == [], "a snippet wrote into the working directory"

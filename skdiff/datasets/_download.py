"""Where data sets live, and how their files get there verified.

Every file skdiff reads has a published checksum in :data:`._registry.REGISTRY`. Downloads go
through :func:`pooch.retrieve`, which streams into a temporary file in the cache folder and
renames it into place only after the checksum matched, so a reader never sees a partial or
unverified file. A per-folder :class:`filelock.FileLock` serialises downloaders: a second
process waiting on the lock finds the files present and downloads nothing. The loaders verify
the same bytes they parse (read once, hashed, then decoded), so a file changed between the
check and the parse cannot slip through.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ._registry import REGISTRY

__all__ = ["get_data_home"]

DATA_HOME_ENV = "SKDIFF_DATA"
DATA_URL_ENV = "SKDIFF_DATA_URL"


def get_data_home(data_home=None) -> Path:
    """The folder skdiff reads data sets from and downloads them into.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder to use. ``None``: the ``SKDIFF_DATA`` environment variable if set, else
        ``~/skdiff_data``.

    Returns
    -------
    path : pathlib.Path
        The folder (``~`` expanded; it need not exist). Planetoid files live in its
        ``planetoid/`` sub-folder, ETT files in ``ett/``.

    Examples
    --------
    >>> from skdiff.datasets import get_data_home
    >>> get_data_home("~/my_data").name
    'my_data'
    """
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_ENV) or Path.home() / "skdiff_data"
    elif not isinstance(data_home, str | os.PathLike):
        raise TypeError(f"'data_home' must be a folder path (str or path-like) or None; got "
                        f"{data_home!r}.")
    return Path(data_home).expanduser()


def _mismatch(known, data):
    """``(expected, received)`` as ``"alg:hex"`` strings when ``data`` does not match ``known``."""
    algorithm, expected = known.split(":", 1)
    received = hashlib.new(algorithm, data).hexdigest()
    if received == expected.lower():
        return None
    return known, f"{algorithm}:{received}"


def check_verify(verify):
    """Refuse a ``verify`` that is not a boolean (a string such as ``"no"`` is truthy)."""
    if not isinstance(verify, bool | np.bool_):
        raise ValueError(f"'verify' must be True or False; got {verify!r}.")


def read_verified(path: Path, *, verify: bool, fetch_call: str) -> bytes:
    """The bytes of ``path``, checked against the registry when ``verify`` and it has an entry.

    ``fetch_call`` is the call that downloads a fresh copy, quoted in the error.
    """
    data = path.read_bytes()
    known = REGISTRY.get(path.name)
    if verify and known is not None:
        bad = _mismatch(known, data)
        if bad is not None:
            raise ValueError(
                f"Checksum mismatch for '{path.name}' ({path}): expected {bad[0]}, got {bad[1]}. "
                "The file is not the published one: it is corrupted, truncated or was modified. "
                f"Delete it and run {fetch_call} to download it again, or pass verify=False to "
                "read a file you changed on purpose."
            )
    return data


def ensure_files(folder: Path, fnames, *, base_url, mirror_dir: str, original_url: str,
                 download_if_missing: bool, what: str, fetch_call: str) -> None:
    """Download the files ``fnames`` that ``folder`` lacks.

    They come from ``<base_url>/<mirror_dir>/<fname>``; ``base_url`` ``None`` means
    ``$SKDIFF_DATA_URL``, else ``<original_url>/<fname>``. Raises :class:`FileNotFoundError`
    when files are missing and ``download_if_missing`` is false; :class:`ValueError` when a
    download does not match its published checksum (nothing is written then);
    :class:`ConnectionError` when a download fails.
    """
    if base_url is None:
        base_url = os.environ.get(DATA_URL_ENV) or None
    root = original_url if base_url is None else f"{str(base_url).rstrip('/')}/{mirror_dir}"
    urls = {fname: f"{root}/{fname}" for fname in fnames}
    missing = [f for f in urls if not (folder / f).is_file()]
    if not missing:
        return
    if not download_if_missing:
        raise FileNotFoundError(
            f"{what} is not in the cache: {', '.join(missing)} missing from {folder}. "
            f"Run {fetch_call} with download_if_missing=True (the default) to download it, "
            "or copy the original files there."
        )
    from filelock import FileLock

    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / ".skdiff-download.lock"):
        for fname in missing:
            if not (folder / fname).is_file():  # another process may have fetched it meanwhile
                _download(urls[fname], folder, fname)


def _download(url: str, folder: Path, fname: str) -> None:
    import pooch
    import requests

    known = REGISTRY[fname]  # every file skdiff downloads has a published checksum
    http = pooch.HTTPDownloader()

    def verified(url_, output_file, pooch_):
        # pooch streams into a temporary file of the cache folder, calls this, checks the hash
        # and only then renames. Checking here too gives the error its file name, URL and remedy.
        http(url_, output_file, pooch_)
        bad = _mismatch(known, Path(output_file).read_bytes())
        if bad is not None:
            raise ValueError(
                f"Downloaded '{fname}' from {url_} does not match its published checksum: "
                f"expected {bad[0]}, got {bad[1]}. The download was discarded: {folder} holds no "
                "copy of it. The server does not serve the original file: point "
                f"base_url (or the {DATA_URL_ENV} environment variable) at an unmodified mirror, "
                "or unset both to download from the original location."
            )

    try:
        pooch.retrieve(url, known_hash=known, fname=fname, path=folder, downloader=verified)
    except (requests.exceptions.RequestException, OSError) as exc:
        raise ConnectionError(
            f"Could not download '{fname}' from {url} ({type(exc).__name__}: {exc}). Check the "
            f"network, or set base_url (or the {DATA_URL_ENV} environment variable) to a reachable "
            f"mirror, or copy the file into {folder} yourself."
        ) from exc

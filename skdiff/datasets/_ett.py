"""The Electricity Transformer Temperature data sets (Zhou et al., Informer, AAAI 2021)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from .._checks import memory_for
from ._download import check_verify, ensure_files, get_data_home, read_verified

__all__ = ["fetch_ett", "load_ett"]

_NAMES = ("ETTh1", "ETTh2", "ETTm1", "ETTm2")
_COLUMNS = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
_URL = "https://github.com/zhouhaoyi/ETDataset/raw/main/ETT-small"


def _check_name(name):
    if name not in _NAMES:
        raise ValueError(f"'name' must be one of {_NAMES}; got {name!r}.")


def _folder(home, name):
    """``home/ett``, or ``home`` itself when it holds ``<name>.csv`` and has no ``ett``
    folder (a ``data_home`` that names the ETT folder, as :func:`load_planetoid` reads one
    that names the Planetoid folder)."""
    if not (home / "ett").is_dir() and (home / f"{name}.csv").is_file():
        return home
    return home / "ett"


def _bad_line(rows, path):
    """The first data line that does not parse, as an error naming its line of ``path``.

    Only runs once the vectorised parse failed, to say where and why.
    """
    for i, row in enumerate(rows):
        fields = row.split(",")
        if len(fields) != 1 + len(_COLUMNS):
            why = f"it has {len(fields)} fields instead of {1 + len(_COLUMNS)}"
        else:
            why = None
            try:
                np.datetime64(fields[0].strip(), "s")
            except ValueError:
                why = f"{fields[0]!r} is not a date"
            for field in fields[1:]:
                try:
                    float(field)
                except ValueError:
                    why = why or f"{field!r} is not a number"
        if why is not None:
            return ValueError(f"{path} line {i + 2} is not a valid ETT row: {why} ({row!r}).")
    return None


def _parse(data: bytes, path):
    """Dates and the 7 channels of an ETT CSV file, checked for shape, values and order."""
    try:
        lines = data.decode("utf-8-sig").splitlines()  # a byte-order mark is fine
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not a UTF-8 text file ({exc}).") from exc
    header = [c.strip() for c in lines[0].split(",")] if lines else []
    if header != ["date", *_COLUMNS]:
        raise ValueError(f"{path} has the columns {header}; an ETT file must have the "
                         f"columns {['date', *_COLUMNS]}, in this order.")
    rows = lines[1:]
    while rows and not rows[-1].strip():  # a trailing newline is fine, a gap is not
        rows.pop()
    if not rows:
        raise ValueError(f"{path} has a header but no data rows.")
    if (np.char.count(np.array(rows), ",") != len(_COLUMNS)).any():
        raise _bad_line(rows, path)
    try:
        values = np.loadtxt(rows, delimiter=",", usecols=range(1, 1 + len(_COLUMNS)),
                            dtype=np.float64, ndmin=2)
        dates = np.loadtxt(rows, delimiter=",", usecols=0, dtype="datetime64[s]", ndmin=1)
    except ValueError as exc:
        raise (_bad_line(rows, path) or ValueError(f"{path} is not a valid ETT file: {exc}")) \
            from exc
    finite = np.isfinite(values).all(axis=1)
    if not finite.all():
        i = int(np.argmin(finite))
        raise ValueError(f"{path} line {i + 2} holds a non-finite value ({rows[i]!r}).")
    step = np.diff(dates)
    if (step <= np.timedelta64(0, "s")).any():
        i = int(np.argmax(step <= np.timedelta64(0, "s")))
        raise ValueError(f"{path} line {i + 3}: the dates must increase; {dates[i + 1]} follows "
                         f"{dates[i]}.")
    return dates, values


def _frame(dates, values, columns, as_frame):
    """The table of dates and channels: a pandas DataFrame or a numpy structured array."""
    if as_frame == "auto":
        try:
            import pandas  # noqa: F401

            as_frame = True
        except ImportError:  # pragma: no cover - pandas is a test/docs extra
            as_frame = False
    if as_frame:
        import pandas as pd

        frame = pd.DataFrame(values, columns=columns)
        frame.insert(0, "date", pd.to_datetime(dates))
        return frame
    frame = np.empty(len(values), dtype=[("date", "datetime64[s]")]
                     + [(c, "f8") for c in columns])
    frame["date"] = dates
    for i, c in enumerate(columns):
        frame[c] = values[:, i]
    return frame


def _standard_split(name, n):
    """The train, validation and test row ranges of the 12/4/4-month split, cut at ``n``."""
    month = 30 * 24 * (4 if name.startswith("ETTm") else 1)  # rows per 30-day month
    return (np.arange(0, min(12 * month, n)), np.arange(min(12 * month, n), min(16 * month, n)),
            np.arange(min(16 * month, n), min(20 * month, n)))


def load_ett(name="ETTh1", data_home=None, *, as_frame="auto", verify=True):
    """Load an ETT series (7 channels, target ``OT``) with its standard split from a local file.

    The standard split of the Informer/Autoformer code keeps 12 months for training, 4 for
    validation and 4 for testing: rows ``0:8640``, ``8640:11520`` and ``11520:14400`` for
    the hourly sets (ETTh1/2), four times that for the 15-minute sets (ETTm1/2). The rows
    after month 20 are not used by that protocol. The file is checked against its published
    checksum and parsed strictly: wrong columns, a value that is not a number, a non-finite
    value or dates out of order raise an error naming the file and line.

    Parameters
    ----------
    name : {"ETTh1", "ETTh2", "ETTm1", "ETTm2"}, default="ETTh1"
        Which series.
    data_home : str or path-like, default=None
        Folder holding ``ett/<name>.csv`` (see :func:`skdiff.datasets.get_data_home`), or
        ``<name>.csv`` itself when it has no ``ett`` folder; :func:`fetch_ett` downloads it
        into ``ett/``.
    as_frame : {"auto", True, False}, default="auto"
        ``frame`` as a pandas DataFrame (``"auto"``: when pandas is installed) or a numpy
        structured array.
    verify : bool, default=True
        Check the file against its published checksum (SHA-256 for ETTh1, MD5 for the others)
        and refuse a mismatch. Pass ``False`` to read a file that was changed on purpose.

    Returns
    -------
    data : Bunch
        ``data`` (T, 7) float64 array of the channels, ``target`` (T,) the ``OT`` column,
        ``feature_names`` (the 7 column names), ``target_column`` (``6``, index of ``OT``),
        ``dates`` (T,) ``datetime64[s]``, ``frame``, ``train_index``, ``val_index``,
        ``test_index`` (integer ranges of the standard split, cut at T for shorter files) and
        ``DESCR``.

    Raises
    ------
    FileNotFoundError
        The file is missing.
    ValueError
        The file does not match its published checksum, or is not a valid ETT file.

    See Also
    --------
    fetch_ett : Download the file into the cache, then load it.

    Examples
    --------
    A three-hour excerpt in the format of the published files:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from skdiff.datasets import load_ett
    >>> home = Path(tempfile.mkdtemp())
    >>> (home / "ett").mkdir()
    >>> _ = (home / "ett" / "ETTh1.csv").write_text(
    ...     "date,HUFL,HULL,MUFL,MULL,LUFL,LULL,OT\\n"
    ...     "2016-07-01 00:00:00,5.827,2.009,1.599,0.462,4.203,1.340,30.531\\n"
    ...     "2016-07-01 01:00:00,5.693,2.076,1.492,0.426,4.142,1.371,27.787\\n"
    ...     "2016-07-01 02:00:00,5.157,1.741,1.279,0.355,3.777,1.218,27.787\\n")
    >>> ett = load_ett("ETTh1", data_home=home, verify=False)  # a hand-made excerpt
    >>> ett.data.shape, ett.feature_names[-1], ett.target
    ((3, 7), 'OT', array([30.531, 27.787, 27.787]))
    >>> str(ett.dates[-1]), ett.train_index
    ('2016-07-01T02:00:00', array([0, 1, 2]))
    """
    _check_name(name)
    # identity, not equality: 1 == True would pass, and a string "no" is truthy
    if not (as_frame == "auto" or as_frame is True or as_frame is False):
        raise ValueError(f"'as_frame' must be 'auto', True or False; got {as_frame!r}.")
    check_verify(verify)
    path = _folder(get_data_home(data_home), name) / f"{name}.csv"
    fetch_call = f"skdiff.datasets.fetch_ett({name!r})"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found. Download it with {fetch_call} (or from {_URL}/{name}.csv into "
            f"{path.parent}), or pass data_home=<folder containing ett/{name}.csv>."
        )
    with memory_for(f"the lines of {path}", "it is not an ETT file: delete it and run "
                    f"{fetch_call}"):
        dates, values = _parse(read_verified(path, verify=verify, fetch_call=fetch_call), path)
    columns = list(_COLUMNS)
    train_index, val_index, test_index = _standard_split(name, len(values))
    return Bunch(
        data=values,
        target=values[:, columns.index("OT")],
        feature_names=columns,
        target_column=columns.index("OT"),
        dates=dates,
        frame=_frame(dates, values, columns, as_frame),
        train_index=train_index,
        val_index=val_index,
        test_index=test_index,
        DESCR=(f"{name}: electricity transformer temperature (Zhou et al., 2021), "
               f"{len(values)} rows, columns {columns}; standard 12/4/4-month split."),
    )

def fetch_ett(name="ETTh1", data_home=None, *, download_if_missing=True, base_url=None,
              as_frame="auto"):
    """Download an ETT series into the cache if needed, verify it and load it.

    ``<name>.csv`` is downloaded once into ``get_data_home(data_home)/ett/``; the download is
    checked against the checksum published for it (a mismatch is refused and nothing is
    written), and the cached file is checked again on every load (see :func:`load_ett`, whose
    result this returns). Concurrent calls on the same cache are safe: the download lands under
    a temporary name and is renamed when verified, and a file lock makes a second process wait
    and reuse it.

    Parameters
    ----------
    name : {"ETTh1", "ETTh2", "ETTm1", "ETTm2"}, default="ETTh1"
        Which series.
    data_home : str or path-like, default=None
        The cache folder (see :func:`get_data_home`: ``$SKDIFF_DATA`` or ``~/skdiff_data``).
    download_if_missing : bool, default=True
        Download a missing file. ``False`` raises :class:`FileNotFoundError` instead (offline
        use).
    base_url : str, default=None
        Root URL of a mirror laid out like the cache, serving ``<base_url>/ett/<name>.csv``
        over http(s). ``None``: the ``SKDIFF_DATA_URL`` environment variable if set, else the
        original files at github.com/zhouhaoyi/ETDataset (``raw/main/ETT-small``).
    as_frame : {"auto", True, False}, default="auto"
        ``frame`` as a pandas DataFrame (``"auto"``: when pandas is installed) or a numpy
        structured array.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        The series as :func:`load_ett` returns it: ``data`` (T, 7) channels, ``target``
        (the ``OT`` column), ``feature_names``, ``target_column``, ``dates``, ``frame``,
        the ``train_index``, ``val_index`` and ``test_index`` of the standard split, and
        ``DESCR``.

    Raises
    ------
    FileNotFoundError
        The file is missing and ``download_if_missing`` is false.
    ValueError
        The download or the cached file does not match its published checksum.
    ConnectionError
        The download failed.

    Examples
    --------
    >>> import tempfile
    >>> from skdiff.datasets import fetch_ett
    >>> ett = fetch_ett("ETTh1")  # doctest: +SKIP
    >>> ett.data.shape, ett.feature_names[-1], len(ett.train_index)  # doctest: +SKIP
    ((17420, 7), 'OT', 8640)

    Offline, an empty cache is reported rather than downloaded:

    >>> fetch_ett("ETTh1", data_home=tempfile.mkdtemp(),
    ...           download_if_missing=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: ETT 'ETTh1' is not in the cache: ETTh1.csv missing from ...
    """
    _check_name(name)
    home = get_data_home(data_home)
    ensure_files(_folder(home, name), [f"{name}.csv"], base_url=base_url, mirror_dir="ett",
                 original_url=_URL, download_if_missing=download_if_missing, what=f"ETT {name!r}",
                 fetch_call=f"skdiff.datasets.fetch_ett({name!r})")
    return load_ett(name, data_home=home, as_frame=as_frame)

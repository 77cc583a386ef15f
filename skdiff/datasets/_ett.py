"""The Electricity Transformer Temperature data sets (Zhou et al., Informer, AAAI 2021)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from ._planetoid import get_data_home

__all__ = ["load_ett"]

_NAMES = ("ETTh1", "ETTh2", "ETTm1", "ETTm2")
_URL = "https://github.com/zhouhaoyi/ETDataset/raw/main/ETT-small/{name}.csv"


def load_ett(name="ETTh1", data_home=None, *, as_frame="auto"):
    """Load an ETT series (7 channels, target ``OT``) with its standard train/val/test split.

    The standard split of the Informer/Autoformer code keeps 12 months for training, 4 for
    validation and 4 for testing: rows ``0:8640``, ``8640:11520`` and ``11520:14400`` for
    the hourly sets (ETTh1/2), four times that for the 15-minute sets (ETTm1/2). The rows
    after month 20 are not used by that protocol.

    Parameters
    ----------
    name : {"ETTh1", "ETTh2", "ETTm1", "ETTm2"}, default="ETTh1"
    data_home : str or path-like, default=None
        Folder holding ``ett/<name>.csv`` (see :func:`skdiff.datasets.get_data_home`).
        Nothing is downloaded: the error message says where to get the file.
    as_frame : {"auto", True, False}, default="auto"
        ``frame`` as a pandas DataFrame (``"auto"``: when pandas is installed) or a numpy
        structured array.

    Returns
    -------
    data : Bunch
        ``data`` (T, 7) float64 array of the channels, ``target`` (T,) the ``OT`` column,
        ``feature_names`` (the 7 column names), ``target_column`` (``6``, index of ``OT``),
        ``dates`` (T,) ``datetime64[s]``, ``frame``, ``train_index``, ``val_index``,
        ``test_index`` (integer ranges of the standard split) and ``DESCR``.

    Examples
    --------
    >>> from skdiff.datasets import load_ett
    >>> ett = load_ett("ETTh1", data_home=DATA_HOME)
    >>> ett.data.shape, ett.feature_names[-1], len(ett.train_index)
    ((17420, 7), 'OT', 8640)
    """
    if name not in _NAMES:
        raise ValueError(f"'name' must be one of {_NAMES}; got {name!r}.")
    if as_frame not in ("auto", True, False):
        raise ValueError(f"'as_frame' must be 'auto', True or False; got {as_frame!r}.")
    path = get_data_home(data_home) / "ett" / f"{name}.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found. Download it from {_URL.format(name=name)} into "
            f"{path.parent} or pass data_home=<folder containing ett/{name}.csv>."
        )
    with open(path) as fh:
        header = fh.readline().strip().split(",")
    columns = header[1:]
    values = np.loadtxt(path, delimiter=",", skiprows=1, usecols=range(1, len(header)))
    dates = np.loadtxt(path, delimiter=",", skiprows=1, usecols=0, dtype=str)
    dates = np.array([d.replace(" ", "T") for d in dates], dtype="datetime64[s]")
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
    else:
        frame = np.empty(len(values), dtype=[("date", "datetime64[s]")]
                         + [(c, "f8") for c in columns])
        frame["date"] = dates
        for i, c in enumerate(columns):
            frame[c] = values[:, i]
    month = 30 * 24 * (4 if name.startswith("ETTm") else 1)  # rows per 30-day month
    return Bunch(
        data=values,
        target=values[:, columns.index("OT")],
        feature_names=columns,
        target_column=columns.index("OT"),
        dates=dates,
        frame=frame,
        train_index=np.arange(0, 12 * month),
        val_index=np.arange(12 * month, 16 * month),
        test_index=np.arange(16 * month, 20 * month),
        DESCR=(f"{name}: electricity transformer temperature (Zhou et al., 2021), "
               f"{len(values)} rows, columns {columns}; standard 12/4/4-month split."),
    )

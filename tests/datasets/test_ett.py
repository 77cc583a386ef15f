import numpy as np
import pytest

from skdiff.datasets import load_ett

from ._toy import TOY_ETT, write_ett


@pytest.fixture(scope="module")
def ett(ett_home):
    return load_ett("ETTh1", data_home=ett_home)


def test_shape_columns_and_split(ett):
    assert ett.data.shape == (17420, 7)
    assert ett.feature_names == ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
    np.testing.assert_array_equal(ett.target, ett.data[:, 6])
    assert ett.target_column == 6
    assert (ett.train_index[0], ett.train_index[-1] + 1) == (0, 8640)
    assert (ett.val_index[0], ett.val_index[-1] + 1) == (8640, 11520)
    assert (ett.test_index[0], ett.test_index[-1] + 1) == (11520, 14400)
    # first row of the public file, and hourly time stamps
    np.testing.assert_allclose(ett.data[0, [0, 6]], [5.827000141143799, 30.5310001373291])
    assert str(ett.dates[0]) == "2016-07-01T00:00:00"
    assert np.all(np.diff(ett.dates) == np.timedelta64(1, "h"))


def test_frame_pandas_and_numpy(ett, ett_home):
    pd = pytest.importorskip("pandas")
    assert isinstance(ett.frame, pd.DataFrame)
    assert list(ett.frame.columns) == ["date"] + ett.feature_names
    rec = load_ett("ETTh1", data_home=ett_home, as_frame=False).frame
    assert rec.dtype.names == ("date", *ett.feature_names)
    np.testing.assert_array_equal(rec["OT"], ett.target)


def test_changed_byte_is_caught(ett, ett_home, tmp_path):
    raw = (ett_home / "ett" / "ETTh1.csv").read_bytes()
    write_ett(tmp_path / "ett" / "ETTh1.csv", raw.replace(b"5.827", b"5.828", 1))  # one digit
    with pytest.raises(ValueError, match=r"Checksum mismatch for 'ETTh1.csv' .*expected "
                       r"sha256:f18de3ad.*got sha256:.*fetch_ett\('ETTh1'\).*verify=False"):
        load_ett("ETTh1", data_home=tmp_path)
    changed = load_ett("ETTh1", data_home=tmp_path, verify=False)
    assert changed.data[0, 0] - ett.data[0, 0] == pytest.approx(0.001, abs=1e-6)
    np.testing.assert_array_equal(changed.data[1:], ett.data[1:])


def test_toy_file_and_clipped_split(tmp_path):
    write_ett(tmp_path / "ett" / "ETTm2.csv")
    d = load_ett("ETTm2", data_home=tmp_path, verify=False, as_frame=False)
    assert d.data.shape == (4, 7)
    np.testing.assert_array_equal(d.target, [30.531, 27.787, 27.787, 25.044])
    np.testing.assert_array_equal(d.train_index, [0, 1, 2, 3])  # 12 months cut at 4 rows
    assert d.val_index.size == 0 and d.test_index.size == 0
    assert str(d.dates[-1]) == "2016-07-01T03:00:00"
    with pytest.raises(ValueError, match=r"Checksum mismatch for 'ETTm2.csv' .*expected md5:"):
        load_ett("ETTm2", data_home=tmp_path)


def test_data_home_may_name_the_ett_folder_itself(tmp_path):
    # as load_planetoid reads a data_home that names the planetoid folder
    from skdiff.datasets import fetch_ett

    write_ett(tmp_path / "ETTh1.csv")  # no ett/ sub-folder
    d = load_ett("ETTh1", data_home=tmp_path, verify=False, as_frame=False)
    np.testing.assert_array_equal(d.target, [30.531, 27.787, 27.787, 25.044])
    with pytest.raises(ValueError, match=r"Checksum mismatch for 'ETTh1.csv' "):
        fetch_ett("ETTh1", data_home=tmp_path, download_if_missing=False)  # found, verified
    # an ett/ folder is the cache layout: it is read, and named when the file is missing
    (tmp_path / "ett").mkdir()
    with pytest.raises(FileNotFoundError, match=r"ett[/\\]ETTh1\.csv not found\. Download"):
        load_ett("ETTh1", data_home=tmp_path, verify=False)
    with pytest.raises(FileNotFoundError, match=r"ett[/\\]ETTh2\.csv not found"):
        load_ett("ETTh2", data_home=tmp_path / "elsewhere")


_LINES = TOY_ETT.splitlines(keepends=True)


def test_a_byte_order_mark_is_read(tmp_path):
    write_ett(tmp_path / "ett" / "ETTh1.csv", b"\xef\xbb\xbf" + TOY_ETT.encode())
    d = load_ett("ETTh1", data_home=tmp_path, verify=False, as_frame=False)
    np.testing.assert_array_equal(d.target, [30.531, 27.787, 27.787, 25.044])


@pytest.mark.parametrize("text, match", [
    ("date,A,B\n2016-07-01 00:00:00,1,2\n",
     r"has the columns \['date', 'A', 'B'\]; an ETT file must have the columns \['date', "
     r"'HUFL'.*'OT'\], in this order"),
    (TOY_ETT.replace("OT\n", "Oil\n"), r"has the columns \[.*'Oil'\]"),
    ("", r"has the columns \[\]"),
    (_LINES[0], "has a header but no data rows"),
    (TOY_ETT.replace("2.076", "abc"), r"line 3 is not a valid ETT row: 'abc' is not a number"),
    (TOY_ETT.replace("2.076", ""), r"line 3 is not a valid ETT row: '' is not a number"),
    (TOY_ETT.replace("2.076", "nan"), r"line 3 holds a non-finite value"),
    (TOY_ETT.replace("2016-07-01 01:00:00", "2016-13-45 01:00:00"),
     r"line 3 is not a valid ETT row: '2016-13-45 01:00:00' is not a date"),
    (TOY_ETT.replace("2.076,", "2.076,1.0,"), r"line 3 is not a valid ETT row: it has 9 fields "
                                              r"instead of 8"),
    (_LINES[0] + _LINES[1] + "\n" + _LINES[2], r"line 3 is not a valid ETT row: it has 1 fields"),
    (_LINES[0] + _LINES[1] + _LINES[3] + _LINES[2],
     r"line 4: the dates must increase; 2016-07-01T01:00:00 follows 2016-07-01T02:00:00"),
    (b"\xff\xfe" + TOY_ETT.encode("utf-16-le"), "is not a UTF-8 text file"),
])
def test_invalid_csv_is_refused_naming_the_file(tmp_path, text, match):
    write_ett(tmp_path / "ett" / "ETTh1.csv", text)
    with pytest.raises(ValueError, match=r"ETTh1\.csv.* " + match):
        load_ett("ETTh1", data_home=tmp_path, verify=False)


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="'name' must be one of"):
        load_ett("ETTx", data_home=tmp_path)
    for as_frame in ("yes", 1):  # 1 == True, yet not a flag
        with pytest.raises(ValueError, match="'as_frame' must be 'auto', True or False"):
            load_ett("ETTh1", data_home=tmp_path, as_frame=as_frame)
    with pytest.raises(ValueError, match="'verify' must be True or False; got 'no'"):
        load_ett("ETTh1", data_home=tmp_path, verify="no")
    with pytest.raises(FileNotFoundError, match=r"ETTh2.csv not found. Download it with "
                       r"skdiff.datasets.fetch_ett\('ETTh2'\) \(or from https://"):
        load_ett("ETTh2", data_home=tmp_path)

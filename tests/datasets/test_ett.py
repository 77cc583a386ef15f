import numpy as np
import pytest

from skdiff.datasets import load_ett


@pytest.fixture(scope="module")
def ett(data_home):
    if not (data_home / "ett" / "ETTh1.csv").is_file():
        pytest.skip("ETTh1.csv not available")
    return load_ett("ETTh1", data_home=data_home)


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
    assert np.all(np.diff(ett.dates[:100]) == np.timedelta64(1, "h"))


def test_frame_pandas_and_numpy(ett, data_home):
    pd = pytest.importorskip("pandas")
    assert isinstance(ett.frame, pd.DataFrame)
    assert list(ett.frame.columns) == ["date"] + ett.feature_names
    rec = load_ett("ETTh1", data_home=data_home, as_frame=False).frame
    assert rec.dtype.names == ("date", *ett.feature_names)
    np.testing.assert_array_equal(rec["OT"], ett.target)


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="'name' must be one of"):
        load_ett("ETTx", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match="ETTh2.csv not found. Download it from https"):
        load_ett("ETTh2", data_home=tmp_path)

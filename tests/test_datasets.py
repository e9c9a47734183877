"""The CSV reader that `bomcmc bnn fit` and `bnn predict` share."""

import numpy as np
import pytest

from bomcmc import BomcmcError
from bomcmc.datasets import read_csv


def test_a_byte_order_mark_and_crlf_are_read(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark, which used to stick to the first
    column's name (`\\ufeffx1`)."""
    f = tmp_path / "excel.csv"
    f.write_bytes("\ufeffx1,x2,y\r\n1,2,3\r\n4,5,6\r\n".encode("utf-8"))
    header, data = read_csv(f)
    assert header == ["x1", "x2", "y"]
    np.testing.assert_array_equal(data, [[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize("body, needle", [
    ("x,y\n1,2\n3,nan\n", "line 3, column 'y'"),
    ("x,y\n1,2\n3,abc\n", "line 3, column 'y': 'abc' is not a number"),
    ("x,y\n1,2\n3\n", "line 3 has 1 fields"),
    ("x,y\n", "no data rows"),
])
def test_every_data_error_names_its_line(tmp_path, body, needle):
    f = tmp_path / "bad.csv"
    f.write_text(body)
    with pytest.raises(BomcmcError, match=needle):
        read_csv(f)

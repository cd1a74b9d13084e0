"""The keyed state's key rule without Spark: a key that is or holds a NaN is refused with
the record and where in the key the NaN is; every other routable key passes."""
from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from sparkbalance.state.forecast import check_costs
from sparkbalance.state.inputs import check_pairs, nan_in_key

NAN = float("nan")


@pytest.mark.parametrize("key,at", [
    (NAN, "key"), (np.float64("nan"), "key"), (np.float32("nan"), "key"),
    (np.float16("nan"), "key"), (np.longdouble("nan"), "key"), (Decimal("NaN"), "key"),
    (Decimal("sNaN"), "key"), (Decimal("-NaN"), "key"), ((1, NAN), "key[1]"),
    (("a", (2, Decimal("sNaN"))), "key[1][1]"), (((NAN,),), "key[0][0]"),
])
def test_nan_like_keys_are_refused_naming_record_and_position(key, at):
    assert nan_in_key(key) == at
    records = [("ok", 1), (key, 2)]
    with pytest.raises(ValueError) as got:
        list(check_pairs(records))
    text = str(got.value)
    assert text.startswith(f"batch record {(key, 2)!r} (record 1 of its input partition) "
                           f"has a NaN key (a NaN at {at}); the keyed state needs keys equal")
    try:
        costs = {key: 1.0}
    except TypeError:
        return                  # Decimal("sNaN") cannot even be a dict key of costs
    with pytest.raises(ValueError, match=r"costs has a NaN key"):
        check_costs(costs)


@pytest.mark.parametrize("key", [1.5, np.float32(2.0), Decimal("2.5"), Decimal("Infinity"),
                                 float("inf"), (1, 2.0), ("a", (Decimal(3), "b")), "nan"])
def test_keys_equal_to_themselves_pass(key):
    assert nan_in_key(key) is None
    assert list(check_pairs([(key, 1)])) == [(key, 1)]

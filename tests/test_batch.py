"""specnb.batch: the largest paying and first losing batch, the article's number format,
nearest measured batches, and bad input."""

import pytest

from specnb import batch


def test_largest_and_first():
    b, r = [2, 4, 8, 16], [1.4, 1.1, 0.9, 1.05]
    assert batch.largest_paying_batch(b, r) == 16
    assert batch.first_losing_batch(b, r) == 8
    assert batch.largest_paying_batch([2], [0.5]) is None
    assert batch.first_losing_batch([2], [1.5]) is None
    with pytest.raises(ValueError, match="same length"):
        batch.largest_paying_batch([1, 2], [1.0])
    with pytest.raises(ValueError, match="ratios"):
        batch.largest_paying_batch([1], [0.0])
    with pytest.raises(ValueError, match="batch_sizes"):
        batch.largest_paying_batch([0], [1.2])


@pytest.mark.parametrize("ratio,shown", [(1.02, "1"), (1.38, "1.4"), (1.34, "1.3"), (0.93, "0.93"),
                                         (1.25, "1.3"), (0.999, "1.00"), (1.0, "1")])
def test_article_format(ratio, shown):
    assert batch.article_format(ratio) == shown


def test_ratio_table_names():
    with pytest.raises(ValueError, match="eagle3_table5_vllm_batch"):
        batch.ratio_table("eagle3_table1")


def test_nearest_measured():
    assert batch.nearest_measured([2, 4, 64, 8], 20) == (8, 64)
    assert batch.nearest_measured([2, 4], 1) == (None, 2)
    assert batch.nearest_measured([2, 4], 128) == (4, None)
    assert batch.nearest_measured([2, 4], 4) == (4, 4)


# --------------------------------------------------------------------------- bad input

def test_scalar_helpers_refuse_arrays_and_bools():
    with pytest.raises(TypeError, match="ratio must be a single number"):
        batch.article_format([1.2, 1.3])


def test_batch_pairs_must_be_one_dimensional_sequences():
    assert batch.largest_paying_batch((b for b in [1, 2]), [1.2, 1.1]) == 2
    with pytest.raises(TypeError, match="batch_sizes must be a 1-D sequence"):
        batch.largest_paying_batch("12", [1.2, 1.1])
    with pytest.raises(TypeError, match="batch_sizes must be a 1-D sequence"):
        batch.largest_paying_batch(4, 1.2)
    with pytest.raises(TypeError, match="ratios"):
        batch.first_losing_batch([1, 2], [[1.2, 1.1]])

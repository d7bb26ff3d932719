"""How capture groups the delete files it reads (``iceberg/jvm.py``: ``listing_chunks``)."""

from __future__ import annotations

from dbt.adapters.fastrefresh.iceberg.jvm import listing_chunks


def test_local_files_are_read_in_groups_spark_lists_without_a_job() -> None:
    paths = [f"file:/w/d{i}.parquet" for i in range(5)] + ["/w/d5.parquet"]
    assert listing_chunks(paths, 2) == [paths[0:2], paths[2:4], paths[4:6]]
    assert listing_chunks(paths, 32) == [paths]
    assert listing_chunks(paths[:1], 1) == [paths[:1]]


def test_files_on_other_storage_are_read_at_once() -> None:
    # There Spark's parallel listing (a job) is what saves time.
    paths = ["s3://bucket/d0.parquet", "file:/w/d1.parquet", "file:/w/d2.parquet"]
    assert listing_chunks(paths, 1) == [paths]
    assert listing_chunks(["hdfs://nn/d0", "hdfs://nn/d1"], 1) == [["hdfs://nn/d0", "hdfs://nn/d1"]]

"""A Rerun recording (.rrd) read back with rerun's own reader, as columns per entity: what the view and live-view
tests compare against the recording."""

from __future__ import annotations

from pathlib import Path


def rrd_columns(rrd: Path) -> dict[str, dict[str, list]]:
    """{entity path: {column: values}} of every chunk in `rrd`; simulation time as integer nanoseconds."""
    import pyarrow as pa
    from rerun.chunk import RrdReader

    columns: dict[str, dict[str, list]] = {}
    for chunk in RrdReader(rrd).stream().collect().stream():
        batch = chunk.to_record_batch()
        entity = columns.setdefault(str(chunk.entity_path), {})
        for key, column in zip(batch.schema.names, batch.columns):
            if pa.types.is_duration(column.type):
                column = column.cast(pa.int64())
            entity.setdefault(key, []).extend(column.to_pylist())
    return columns

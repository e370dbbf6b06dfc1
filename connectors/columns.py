"""The flat-column rule for the connectors: flatcolumns/ (shared with the service, which reads it
for its CSV and its document's `x-signals-columns`), under the name the connectors have always
imported it by."""

from __future__ import annotations

from flatcolumns import (
    HEADINGS,
    PAIR,
    SEPARATOR,
    Path,
    Shape,
    column_name,
    document_entry,
    flat_columns,
    flat_record,
    heading,
    headings,
    level_text,
    record_shape,
    schema_shape,
)

__all__ = ["HEADINGS", "PAIR", "SEPARATOR", "Path", "Shape", "column_name", "document_entry", "flat_columns",
           "flat_record", "heading", "headings", "level_text", "record_shape", "schema_shape"]

"""The polars engine (SIGNALS_ENGINE=polars, the default): every endpoint computed in memory over the
Parquet store's snapshot (`EventFrames`, service/store/reader.py), one module per endpoint."""

from service.engine.polars.engine import PolarsEngine

__all__ = ["PolarsEngine"]

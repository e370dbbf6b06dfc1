"""Metrics (Prometheus, every process of a machine) and logging."""

"""The product's processes for real: `python -m service` in a subprocess, the Procfile's gunicorn
with slow and unfinished clients, and hostile input against the MCP and dashboard processes."""

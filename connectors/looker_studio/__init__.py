"""The Looker Studio community connector (Apps Script: Code.gs, Reports.gs, appsscript.json) and the
generator of its report table (`python -m connectors.looker_studio.generate`, generate.py), which
makes Reports.gs from the API's served OpenAPI document. docs/dashboard-builders.md says how to
deploy it."""

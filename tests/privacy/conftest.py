"""The privacy stage (service/privacy): noise, caps and suppression without HTTP
(tests/support/privacy_stage.py publishes frames as the engine would), and end to end over HTTP."""

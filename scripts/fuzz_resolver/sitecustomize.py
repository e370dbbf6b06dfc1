"""Loaded by the fuzz run's server only (scripts/fuzz.sh puts this folder on its PYTHONPATH).

This machine has no DNS, so every webhook URL with a host name that schemathesis generates
(https://0.com/) would be refused as "does not resolve" although the document allows it, and the
run would report that refusal as a failure of the API. Here a name that does not resolve resolves
to one public address (93.184.215.14), so the URL rules are what is tested, not the network. No
request goes there: the fuzz run starts no worker process, and test deliveries are only queued.
"""

import socket

_real = socket.getaddrinfo
PUBLIC = "93.184.215.14"


def _getaddrinfo(host, port, *args, **kwargs):
    try:
        return _real(host, port, *args, **kwargs)
    except (socket.gaierror, UnicodeError):
        return _real(PUBLIC, port, *args, **kwargs)


socket.getaddrinfo = _getaddrinfo

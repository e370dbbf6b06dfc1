"""Settings read from the environment, typed by their dataclass fields: the one reader behind
`service/settings.py` and `connectors/settings.py` (and, through the connectors', the dashboard's).

Shared the way `paramcheck/` is: both import it, it imports neither, so the connectors stay a
program of their own that never imports `service/`.
"""

from envfields.fields import env_field, read_env
from envfields.networks import Network, parse_networks

__all__ = ["Network", "env_field", "parse_networks", "read_env"]

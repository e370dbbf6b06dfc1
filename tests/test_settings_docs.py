"""Every environment variable the settings read (the service's, and those of the processes that
call it: dashboard, MCP server, connectors) is documented in .env.example, and vice versa."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_documented_in_env_example():
    readers = ["service/settings.py", "dashboard/settings.py", "connectors/settings.py", "connectors/mcp/__main__.py"]
    source = "\n".join((ROOT / path).read_text() for path in readers)
    read = set(re.findall(r'\(\s*"((?:SIGNALS_|REDIS_|PORT|WEB_)[A-Z_]*)"', source))
    documented = {line.split("=", 1)[0] for line in (ROOT / ".env.example").read_text().splitlines()
                  if line and not line.startswith("#")}
    assert read, "no settings found: the pattern no longer matches settings.py"
    assert read - documented == set(), "settings read but not documented in .env.example"
    assert documented - read == set(), ".env.example documents settings nobody reads"

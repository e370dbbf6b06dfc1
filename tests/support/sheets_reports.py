"""The Sheets connector's tests: the fake spreadsheet's id, a reports TOML, the batchUpdate
requests the fake Sheets server (connectors/sheets/emulator.py) received."""

from __future__ import annotations

import json

SHEET = "ss-1"


def batch_updates(fake):
    return [entry for entry in fake.log if entry[1].endswith(":batchUpdate")]


def write_config(tmp_path, reports, spreadsheet=SHEET, extra=""):
    lines = [f'spreadsheet = "{spreadsheet}"', extra, ""]
    for worksheet, endpoint, params in reports:
        lines += ["[[report]]", f'worksheet = "{worksheet}"', f'endpoint = "{endpoint}"',
                  "params = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in params.items()) + " }", ""]
    path = tmp_path / "reports.toml"
    path.write_text("\n".join(lines))
    return path

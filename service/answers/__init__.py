"""An answer's path, from a prepared request to the entry served (serving.py reads top to bottom
as that path: key -> cache -> stale -> flight -> compute under the work limit -> render -> the
privacy budget's charge); what a prepared request is (prepared.py)."""

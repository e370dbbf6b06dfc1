"""The disclaimer every JSON response (and the CSV header X-Signals-Disclaimer) carries."""

DISCLAIMER = (
    "Aggregated, anonymous statistics about filtering activity, with statistical noise applied for privacy. "
    "Numbers are approximate estimates and must not be treated as exact. They do not represent editorial "
    "claims or endorsements."
)

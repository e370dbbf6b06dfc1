"""Privacy as a release: what Signals publishes is decided by a schedule, never by who asks.

The privacy unit is the **user-day** (one user's events in one UTC day). When an hour closes, its
events are bounded per user-day (`bounding`: at most K cells of each table, each cell's sums
clipped) and released into a fixed menu of tables (`menu`), each a set of noisy sums over the
nodes of a fixed time hierarchy that close at that hour (`levels`: the hour, its quarter of the
day, the day, the ISO week). Noise is drawn once per node (`noise`), the values are stored and
never drawn again (`storage`), and a privacy accountant composes the whole schedule into ε per
user-day and per user-month (`accountant`). Every answer — the six GETs, `/query` inside the
menu, trending and its webhooks, and through them the dashboard, the Sheets connector and the MCP
tools — is post-processing of the stored values (`windows`, `estimates`): serving a request draws
no noise.

docs/privacy.md says what this guarantees, step by step, and what it costs.
"""

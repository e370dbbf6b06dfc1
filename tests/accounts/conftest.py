"""service/accounts: keys, authentication and revocation on SQLite and PostgreSQL (the root
conftest's `accounts_url`), the accounts database out of reach, and the `keys` command line."""

"""The database: tables, engine set-up, queries and migrations."""

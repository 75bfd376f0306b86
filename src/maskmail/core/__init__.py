"""Pure rules: no I/O, no database, no HTTP, no SMTP."""

"""The web dashboard: server-rendered pages for people, beside the API in the same app."""

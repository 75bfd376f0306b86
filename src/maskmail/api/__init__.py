"""The HTTP door: the /v3/relay/addresses JSON API."""

"""What both HTTP doors (``api`` and ``web``) share and neither owns: who the client is,
the URL it sees, the per-request connection, the rate limiter and the status of each
error. Below both doors, so that neither imports the other."""

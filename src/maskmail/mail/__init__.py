"""The mail plane: receive for relay addresses, decide, forward or drop, and count."""

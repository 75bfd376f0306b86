"""One module per page of the dashboard."""

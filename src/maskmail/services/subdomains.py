"""The rules a new subdomain name meets, from the settings: one for the API's routes and
the dashboard's page."""

from __future__ import annotations

from maskmail.config import Settings
from maskmail.store.subdomains import Naming


def naming(settings: Settings) -> Naming:
    """Names go below MASKMAIL_DOMAIN and are never the relay's mail host name; a user
    takes at most MASKMAIL_SUBDOMAIN_NAMES_PER_DAY names (claims and renames) a day."""
    return Naming(settings.domain, (settings.mail_hostname,), settings.subdomain_names_per_day)

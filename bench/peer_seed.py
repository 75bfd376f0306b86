"""Runs inside the DRF peer's venv: bulk-create accounts there; prints their keys as JSON.

Usage: python peer_seed.py PEER_DIR < counts.json   (one address count per user)
"""

import hashlib
import json
import os
import secrets
import sys
import time

sys.path.insert(0, sys.argv[1])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "peer.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import transaction  # noqa: E402
from peer.models import ApiKey, RelayAddress  # noqa: E402


def main() -> None:
    counts = json.load(sys.stdin)
    created = int(time.time())
    keys = ["mk_" + secrets.token_urlsafe(32) for _ in counts]
    user_model = get_user_model()
    with transaction.atomic():
        users = user_model.objects.bulk_create(
            [
                user_model(username=f"user{i}@example.com", email=f"user{i}@example.com")
                for i in range(1, len(counts) + 1)
            ]
        )
        users = list(user_model.objects.order_by("id"))
        ApiKey.objects.bulk_create(
            [
                ApiKey(user=u, key_hash=hashlib.sha256(k.encode()).hexdigest())
                for u, k in zip(users, keys, strict=True)
            ]
        )
        RelayAddress.objects.bulk_create(
            [
                RelayAddress(
                    user=u, address=f"u{u.pk}n{i}", domain=settings.DOMAIN, created_time=created
                )
                for u, n in zip(users, counts, strict=True)
                for i in range(n)
            ],
            batch_size=5000,
        )
    json.dump(keys, sys.stdout)


main()

"""Request bodies are read as JSON whatever their Content-Type.

``curl -d '{...}'`` labels its body ``application/x-www-form-urlencoded``, and scripts
send ``text/plain``; FastAPI would hand such a body to the model as bytes and refuse it.
No API route takes a form or a file, so every body sent to one is parsed as JSON, and
one that is not JSON is a 422 that says so. ``api/front.py`` applies this to the API's
paths only: pages that post forms are left alone.
"""

from __future__ import annotations

JSON = b"application/json"
WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})
Headers = list[tuple[bytes, bytes]]


def _is_json(content_type: bytes) -> bool:
    media = content_type.partition(b";")[0].strip().lower()
    return media == JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


def as_json(headers: Headers) -> Headers:
    """The headers with a Content-Type that is not a JSON type replaced (a new list), or
    the same list when there is nothing to replace."""
    if any(n == b"content-type" and not _is_json(v) for n, v in headers):
        return [(n, JSON if n == b"content-type" else v) for n, v in headers]
    return headers

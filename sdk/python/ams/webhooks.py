"""Verifying webhook deliveries.

Every delivery is a ``POST`` whose body is the event as JSON, signed twice:

- ``X-Service-Signature: sha256=<hex>``: the lowercase hex HMAC-SHA256 of the
  exact body bytes, keyed with the webhook secret (its UTF-8 bytes);
- the Standard Webhooks headers (https://www.standardwebhooks.com):
  ``webhook-id`` (the event id: deduplicate on it), ``webhook-timestamp``
  (Unix seconds) and ``webhook-signature: v1,<base64>``, the HMAC-SHA256 of
  ``"{id}.{timestamp}.{body}"`` keyed with the secret, or with the decoded
  bytes of a ``whsec_<base64>`` secret. It may list several signatures,
  space-separated; one valid is enough.

During a secret rotation ``webhook-signature`` carries a signature by each
secret still signing while ``X-Service-Signature`` is only ever the newest
secret's: ``construct_event`` therefore decides on ``webhook-signature``
when it is present (a receiver still holding the old secret accepts) and
checks ``X-Service-Signature`` only when it is absent, as the Go and
TypeScript SDKs do (sdk/testdata/webhook-rotation.json).

Verify the raw body bytes as received, before parsing them: any
re-serialization changes the bytes. Both checks compare in constant time and
raise ``WebhookVerificationError``; the Standard Webhooks check also rejects a
timestamp more than ``tolerance`` seconds (default 5 minutes) from now, so a
captured delivery cannot be replayed later.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Iterable, Optional, Protocol, Union

from .errors import WebhookVerificationError
from .types import Event

__all__ = [
    "DEFAULT_TOLERANCE",
    "compute_signature",
    "compute_standard_signature",
    "verify_signature",
    "verify_standard_webhook",
    "construct_event",
]

DEFAULT_TOLERANCE = 300  # seconds

Payload = Union[bytes, bytearray, memoryview, str]


class Headers(Protocol):
    """Request headers: a ``dict``, any mapping, or a framework's headers
    object, such as ``http.server``'s (an ``email.message.Message``).
    Names are looked up case-insensitively."""

    def keys(self) -> Iterable[Any]: ...

    def __getitem__(self, name: str, /) -> Any: ...

_TIMESTAMP = re.compile(r"^[0-9]{1,15}$")


def _bytes(payload: Payload) -> bytes:
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    raise TypeError("the payload must be the raw body as bytes (or str), got %s" % type(payload).__name__)


def _standard_key(secret: str) -> bytes:
    """The Standard Webhooks HMAC key: the decoded part of a
    ``whsec_<base64>`` secret, else the secret's UTF-8 bytes (as the service
    signs)."""
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret[len("whsec_") :], validate=True)
        except (binascii.Error, ValueError):
            pass
    return secret.encode("utf-8")


def compute_signature(secret: str, payload: Payload) -> str:
    """The ``X-Service-Signature`` value of ``payload``: ``sha256=<hex>``."""
    mac = hmac.new(secret.encode("utf-8"), _bytes(payload), hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def compute_standard_signature(secret: str, webhook_id: str, timestamp: Union[int, str], payload: Payload) -> str:
    """The ``webhook-signature`` value: ``v1,<base64>``."""
    mac = hmac.new(_standard_key(secret), digestmod=hashlib.sha256)
    mac.update(("%s.%s." % (webhook_id, timestamp)).encode("utf-8"))
    mac.update(_bytes(payload))
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


def _header(headers: Headers, name: str) -> str:
    """A header of a case-insensitive or plain mapping ('' when absent)."""
    get = getattr(headers, "get", None)
    v = get(name) if get is not None else None
    if v is None:
        lname = name.lower()
        for k in headers.keys():
            if isinstance(k, str) and k.lower() == lname:
                v = headers[k]
                break
    if isinstance(v, (list, tuple)):
        v = v[0] if v else None
    if isinstance(v, bytes):
        v = v.decode("latin-1")
    return v if isinstance(v, str) else ""


def verify_signature(payload: Payload, header: Optional[str], secret: str) -> None:
    """Check ``X-Service-Signature`` (``header``) against the raw body and
    the webhook secret; raise ``WebhookVerificationError`` unless it
    matches.

    >>> ams.verify_signature(body, request.headers["X-Service-Signature"], secret)
    """
    if not secret:
        raise WebhookVerificationError("no webhook secret given")
    expected = compute_signature(secret, payload).encode("ascii")
    got = (header or "").strip().encode("utf-8")
    if not got:
        raise WebhookVerificationError("missing X-Service-Signature header")
    if not hmac.compare_digest(got, expected):
        raise WebhookVerificationError("X-Service-Signature does not match the body")


def verify_standard_webhook(
    payload: Payload,
    headers: Headers,
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> None:
    """Check the Standard Webhooks headers (``webhook-id``,
    ``webhook-timestamp``, ``webhook-signature``; looked up
    case-insensitively in ``headers``) against the raw body and the secret,
    and the timestamp against the clock (``now``, Unix seconds, default the
    current time) within ``tolerance`` seconds either way; raise
    ``WebhookVerificationError`` unless one ``v1`` signature matches.

    >>> ams.verify_standard_webhook(body, request.headers, secret)
    """
    if not secret:
        raise WebhookVerificationError("no webhook secret given")
    msg_id = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp").strip()
    sigs = _header(headers, "webhook-signature")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    if not _TIMESTAMP.match(ts):
        raise WebhookVerificationError("invalid webhook-timestamp header")
    t = int(ts)
    current = time.time() if now is None else now
    if t < current - tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old")
    if t > current + tolerance:
        raise WebhookVerificationError("webhook-timestamp is in the future")
    expected = compute_standard_signature(secret, msg_id, ts, payload).encode("ascii")
    ok = False
    for sig in sigs.split(" "):
        version, sep, _ = sig.partition(",")
        if not sep or version != "v1":
            continue
        if hmac.compare_digest(sig.encode("utf-8"), expected):
            ok = True  # no early exit: every entry costs the same
    if not ok:
        raise WebhookVerificationError("no matching signature in webhook-signature")


def construct_event(
    payload: Payload,
    headers: Headers,
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> Event:
    """Verify a delivery and return its event. The Standard Webhooks
    headers are checked (with the timestamp tolerance) when present, else
    ``X-Service-Signature``.

    >>> event = ams.construct_event(body, request.headers, secret)
    >>> if event.type == "message.created": ...
    """
    if _header(headers, "webhook-signature"):
        verify_standard_webhook(payload, headers, secret, tolerance=tolerance, now=now)
    else:
        verify_signature(payload, _header(headers, "x-service-signature"), secret)
    try:
        data = json.loads(_bytes(payload).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise WebhookVerificationError("the body is not a JSON event") from e
    if not isinstance(data, dict):
        raise WebhookVerificationError("the body is not a JSON event")
    return Event.from_dict(data)

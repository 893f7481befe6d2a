"""Errors raised by the SDK.

Every non-2xx answer of the API raises an ``AmsError`` subclass chosen by the
error body's ``type`` (which the HTTP status fixes):

==========================  =========================  =======================
``type``                    status                     exception
==========================  =========================  =======================
``invalid_request_error``   400, 404, 405, 409, 413,    ``InvalidRequestError``
                            415
``authentication_error``    401                        ``AuthenticationError``
``permission_error``        403                        ``PermissionError_``
``rate_limit_error``        429                        ``RateLimitError``
``api_error``               5xx                        ``APIError``
==========================  =========================  =======================

``NotFoundError`` (404) and ``ConflictError`` (409) are ``InvalidRequestError``
subclasses. An answer without the API's error body (from a proxy, say)
gets the type its status fixes. A request that got no answer at all (connection refused, timeout,
a stream cut off) raises ``APIConnectionError``. OAuth token endpoint errors
(RFC 6749 section 5.2) raise ``OAuthError``; a webhook that fails
verification raises ``WebhookVerificationError``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

__all__ = [
    "AmsError",
    "InvalidRequestError",
    "NotFoundError",
    "ConflictError",
    "AuthenticationError",
    "PermissionError_",
    "PermissionDeniedError",
    "RateLimitError",
    "APIError",
    "APIConnectionError",
    "OAuthError",
    "WebhookVerificationError",
]


class AmsError(Exception):
    """An error answer of the API.

    Attributes: ``status`` (HTTP status; ``None`` when no answer came),
    ``type`` and ``code`` (machine-readable, such as ``"resource_missing"``;
    match on these, never on the message), ``param`` (the parameter at fault
    or ``None``), ``request_id`` (quote it to support), ``message`` (for
    people), ``retry_after`` (seconds the server asked to wait, or ``None``),
    ``headers`` (the answer's headers) and ``body`` (the parsed error body).
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        type: str = "api_error",
        code: str = "",
        param: Optional[str] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.code = code
        self.param = param
        self.request_id = request_id
        self.retry_after = retry_after
        self.headers: Dict[str, str] = dict(headers or {})
        self.body = body

    def __str__(self) -> str:
        parts = []
        if self.status is not None:
            parts.append(str(self.status))
        if self.code or self.type:
            parts.append(self.code or self.type)
        s = "ams: " + " ".join(parts) + (": " if parts else "") + self.message
        if self.param:
            s += " (param %s)" % self.param
        if self.request_id:
            s += " (request %s)" % self.request_id
        return s

    def __repr__(self) -> str:
        return "%s(status=%r, type=%r, code=%r, param=%r, request_id=%r, message=%r)" % (
            self.__class__.__name__,
            self.status,
            self.type,
            self.code,
            self.param,
            self.request_id,
            self.message,
        )


class InvalidRequestError(AmsError):
    """``invalid_request_error``: the request is wrong (400, 404, 405, 409,
    413, 415)."""


class NotFoundError(InvalidRequestError):
    """404: no such record in this account (``resource_missing``)."""


class ConflictError(InvalidRequestError):
    """409: for example ``idempotency_key_reused`` (the key was used for
    another request), ``webhook_inactive`` (ping, redeliver or recover a
    webhook that is off), ``webhook_limit_reached`` (the account has as
    many webhooks as it may), ``api_key_limit_reached`` or
    ``oauth_client_limit_reached`` (as many API keys in use, or OAuth
    clients, as it may)."""


class AuthenticationError(AmsError):
    """``authentication_error`` (401): missing, unknown, revoked or expired
    key or token."""


class PermissionError_(AmsError):
    """``permission_error`` (403): the key or token lacks the permission
    (``insufficient_scope``), or the account is still on the early-access
    waitlist (``account_on_waitlist``: no webhooks until approved). Named
    with a trailing underscore so as not to shadow Python's built-in
    ``PermissionError``; ``PermissionDeniedError`` is the same class."""


PermissionDeniedError = PermissionError_


class RateLimitError(AmsError):
    """``rate_limit_error`` (429): over the plan's requests per minute or per
    day (``rate_limit_exceeded``), or as many turns and streams in progress
    as the account may have at once (``concurrent_turns_exceeded``);
    ``retry_after`` says how long to wait. Raised once the client's own
    retries are exhausted or the wait is longer than it waits by itself."""


class APIError(AmsError):
    """``api_error``: the server failed (5xx), or answered without an error
    body."""


class APIConnectionError(AmsError):
    """No (complete) answer: connection failed, timed out, or a stream was
    cut off. ``status`` is ``None`` (or the stream's status)."""

    def __init__(self, message: str, **kw: Any) -> None:
        kw.setdefault("type", "api_connection_error")
        super().__init__(message, **kw)


class OAuthError(AmsError):
    """An error of ``/oauth/token`` or ``/oauth/revoke`` (RFC 6749 section
    5.2): ``code`` (and ``error``) is the RFC's ``error`` field, such as
    ``invalid_grant`` or ``invalid_client``; ``message`` (and
    ``error_description``) its description."""

    def __init__(self, message: str, **kw: Any) -> None:
        kw.setdefault("type", "oauth_error")
        super().__init__(message, **kw)

    @property
    def error(self) -> str:
        return self.code

    @property
    def error_description(self) -> str:
        return self.message


class WebhookVerificationError(Exception):
    """A webhook delivery failed verification: bad or missing signature,
    or a timestamp outside the tolerance. Answer such a request with 400 and
    do not act on it."""


_BY_TYPE = {
    "invalid_request_error": InvalidRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": PermissionError_,
    "rate_limit_error": RateLimitError,
    "api_error": APIError,
}

_STATUS_TEXT = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def _type_for_status(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 429:
        return "rate_limit_error"
    if 400 <= status < 500:
        return "invalid_request_error"
    return "api_error"


def error_from_response(
    status: int,
    raw: bytes,
    headers: Mapping[str, str],
    retry_after: Optional[float] = None,
) -> AmsError:
    """Build the exception of an error answer (status, body bytes, headers)."""
    hdrs = {k.lower(): v for k, v in headers.items()}
    request_id = hdrs.get("x-request-id")
    body: Any = None
    err: Dict[str, Any] = {}
    try:
        body = json.loads(raw.decode("utf-8")) if raw else None
    except (ValueError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        if isinstance(body.get("request_id"), str) and body["request_id"]:
            request_id = body["request_id"]
    etype = err.get("type") if isinstance(err.get("type"), str) else None
    if not etype:
        # No error body (a proxy's answer, say): the type the status fixes.
        etype = _type_for_status(status)
    message = err.get("message") if isinstance(err.get("message"), str) else ""
    if not message:
        message = _STATUS_TEXT.get(status, "HTTP status %d" % status)
    cls = _BY_TYPE.get(etype, AmsError)
    if cls is InvalidRequestError and status == 404:
        cls = NotFoundError
    elif cls is InvalidRequestError and status == 409:
        cls = ConflictError
    param = err.get("param")
    code = err.get("code")
    return cls(
        message,
        status=status,
        type=etype,
        code=code if isinstance(code, str) else "",
        param=param if isinstance(param, str) and param else None,
        request_id=request_id,
        retry_after=retry_after,
        headers=headers,
        body=body,
    )

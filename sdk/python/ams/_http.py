"""The HTTP layer: one request with retries, over urllib.request."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import secrets
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .errors import AmsError, APIConnectionError, ConflictError, error_from_response

# Backoff when the server gives no Retry-After: 0.5 s, 1 s, 2 s, ... capped
# at 8 s, each shortened by a random jitter of up to 25 %.
INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 8.0
# The longest Retry-After the client waits for by itself; beyond it (a daily
# limit, say) the error is raised at once with its retry_after set.
MAX_RETRY_AFTER = 61.0  # the longest wait of the sliding minute window
# How much of an error answer is read.
MAX_ERROR_BODY = 1 << 20

_IDEMPOTENT_METHODS = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"}


def new_idempotency_key() -> str:
    """A random Idempotency-Key: ``ams-py-`` and 32 hex characters."""
    return "ams-py-" + secrets.token_hex(16)


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from a Retry-After header (delay seconds or an HTTP
    date), capped at a day; ``None`` when absent or unreadable."""
    if not value:
        return None
    v = value.strip()
    if v.isdigit():
        n = int(v)
        return float(min(n, 86400)) if n > 0 else None
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    delta = float(when.timestamp()) - (time.time() if now is None else now)
    return min(delta, 86400.0) if delta > 0 else None


def backoff(attempt: int) -> float:
    d = MAX_BACKOFF if attempt >= 5 else min(INITIAL_BACKOFF * 2.0**attempt, MAX_BACKOFF)
    return d - random.uniform(0, d / 4)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The API never redirects; a 3xx is returned as an error, not followed
    (following would drop the body of a POST)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


# retry classes of a failed attempt
_NO, _UNSENT, _IF_REPEATABLE = 0, 1, 2


class Transport:
    """Sends requests to one server with one credential."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str],
        *,
        timeout: Optional[float],
        max_retries: int,
        user_agent: str,
        sleep: Callable[[float], None] = time.sleep,
        opener: Optional[urllib.request.OpenerDirector] = None,
    ) -> None:
        base = base_url.rstrip("/")
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        self.base_url = base
        self.token = token
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self.user_agent = user_agent
        self.sleep = sleep
        self.opener = opener or urllib.request.build_opener(_NoRedirect())

    # -- URLs ---------------------------------------------------------------

    def url(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        if not path.startswith("/"):
            path = "/" + path
        if not (path == "/v1" or path.startswith("/v1/") or path.startswith("/v1?")):
            path = "/v1" + path
        u = self.base_url + path
        q = encode_query(query)
        if q:
            u += ("&" if "?" in u else "?") + q
        return u

    # -- requests -----------------------------------------------------------

    def headers(self, accept: str = "application/json") -> Dict[str, str]:
        h = {"Accept": accept, "User-Agent": self.user_agent}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        idempotency_key: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Tuple[int, Dict[str, str], Any]:
        """Send one API request (retrying as documented) and return the
        status, headers and decoded JSON body (``None`` when empty)."""
        method = method.upper()
        url = self.url(path, query)
        h = self.headers()
        payload: Optional[bytes] = None
        if body is not None:
            payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        if method == "POST":
            h["Idempotency-Key"] = idempotency_key or h.get("Idempotency-Key") or new_idempotency_key()
        elif idempotency_key:
            h["Idempotency-Key"] = idempotency_key
        resp = self.open(method, url, h, payload)
        try:
            status = resp.status
            rh = dict(resp.headers.items())
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise APIConnectionError("%s %s: reading the answer failed: %s" % (method, url, e)) from e
        finally:
            resp.close()
        data = None
        if raw.strip():
            try:
                data = json.loads(raw.decode("utf-8"))
            except ValueError as e:
                raise AmsError(
                    "%s %s: the answer (status %d) is not JSON" % (method, url, status),
                    status=status,
                    request_id=rh.get("X-Request-Id"),
                    headers=rh,
                ) from e
        return status, rh, data

    def open(
        self, method: str, url: str, headers: Dict[str, str], payload: Optional[bytes]
    ) -> http.client.HTTPResponse:
        """Send the request until a 2xx answer, retrying 429, 5xx and
        connection failures; return the open 2xx response (the caller reads
        and closes it) or raise. Every attempt sends the same headers, so
        the same Idempotency-Key."""
        attempt = 0
        while True:
            wait, result = self.try_open(method, url, headers, payload, attempt)
            if not isinstance(result, AmsError):
                return result  # type: ignore[no-any-return]
            if wait is None or attempt >= self.max_retries:
                raise result
            self.sleep(wait)
            attempt += 1

    def try_open(
        self, method: str, url: str, headers: Dict[str, str], payload: Optional[bytes], attempt: int
    ) -> Tuple[Optional[float], Any]:
        """One attempt of open(), retry number ``attempt`` (from 0): return
        (wait, result), result the open 2xx response or the AmsError, and
        for an error, the seconds open() waits before sending the request
        again (its Retry-After, else the backoff), or None when it is not
        sent again (whatever the attempt). For a caller that retries
        itself (an event stream without a cursor lists what it missed
        before it reconnects)."""
        retry, result = self._attempt(method, url, headers, payload)
        if not isinstance(result, AmsError):
            return None, result
        repeatable = "Idempotency-Key" in headers or method in _IDEMPOTENT_METHODS
        if retry == _NO or (retry == _IF_REPEATABLE and not repeatable):
            return None, result
        if result.retry_after is not None:
            return (None if result.retry_after > MAX_RETRY_AFTER else result.retry_after), result
        return backoff(attempt), result

    def _attempt(
        self, method: str, url: str, headers: Dict[str, str], payload: Optional[bytes]
    ) -> Tuple[int, Any]:
        req = urllib.request.Request(url, data=payload, headers=dict(headers), method=method)
        try:
            resp = self.opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            try:
                raw = e.read(MAX_ERROR_BODY) if e.fp is not None else b""
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                e.close()
            rh = dict(e.headers.items()) if e.headers is not None else {}
            err = error_from_response(e.code, raw, rh, parse_retry_after(rh.get("Retry-After")))
            return _classify(err), err
        except urllib.error.URLError as e:
            reason = e.reason
            unsent = isinstance(reason, ConnectionRefusedError)
            msg = "%s %s: %s" % (method, url, reason)
            return (_UNSENT if unsent else _IF_REPEATABLE), APIConnectionError(msg)
        except (socket.timeout, TimeoutError) as e:
            return _IF_REPEATABLE, APIConnectionError("%s %s: timed out (%s)" % (method, url, e))
        except (OSError, http.client.HTTPException) as e:
            return _IF_REPEATABLE, APIConnectionError("%s %s: %s" % (method, url, e))
        if not 200 <= resp.status < 300:  # a 1xx/3xx answer that was not raised
            raw = resp.read(MAX_ERROR_BODY)
            resp.close()
            rh = dict(resp.headers.items())
            return _NO, error_from_response(resp.status, raw, rh)
        return _NO, resp


def _classify(err: AmsError) -> int:
    if err.status == 429:
        return _UNSENT  # refused before it ran
    if isinstance(err, ConflictError) and err.code == "idempotency_key_in_use":
        return _UNSENT  # the first attempt still runs; the retry replays its answer
    if err.status is not None and err.status >= 500:
        return _IF_REPEATABLE
    return _NO


def encode_query(query: Optional[Mapping[str, Any]]) -> str:
    if not query:
        return ""
    pairs = []
    for k, v in query.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif not isinstance(v, str):
            from .types import format_time  # datetimes and dates

            v = format_time(v) if hasattr(v, "isoformat") else str(v)
        pairs.append((k, v))
    return urllib.parse.urlencode(pairs)


def seg(value: str) -> str:
    """One path segment, escaped."""
    if not isinstance(value, str) or not value:
        raise ValueError("an id must be a non-empty string, got %r" % (value,))
    return urllib.parse.quote(value, safe="")

"""OAuth 2.0 helpers: act for a user with the authorization-code flow.

1. ``oauth.authorization_url(["read", "messages"])`` gives a URL to send the
   user to, a random ``state`` and a PKCE ``code_verifier`` (S256): keep both
   in the user's session.
2. The user signs in and consents; the server redirects to your
   ``redirect_uri`` with ``code`` and ``state``. Check ``state``, then
   ``oauth.exchange_code(code, code_verifier)`` returns an ``OAuthToken``.
3. ``ams.Client(access_token=token.access_token)`` calls the API for the
   user; ``oauth.refresh(token.refresh_token)`` renews the token after its
   hour (refresh tokens rotate: keep the new one).

The OAuth endpoints are at the server root (``/oauth/authorize``,
``/oauth/token``, ``/oauth/revoke``), not under ``/v1``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, Optional, Tuple, Union

from . import __version__
from .errors import APIConnectionError, OAuthError
from .types import AuthorizationRequest, OAuthToken

__all__ = ["OAuth", "generate_pkce", "register_client", "SCOPES"]

SCOPES = ("read", "write", "admin", "messages", "integrations")


def generate_pkce() -> Tuple[str, str]:
    """A PKCE pair: a random ``code_verifier`` (43 characters) and its S256
    ``code_challenge`` (base64url of its SHA-256, without padding)."""
    verifier = secrets.token_urlsafe(32)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    challenge = base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
    return verifier, challenge


def register_client(
    base_url: str,
    redirect_uris: Iterable[str],
    *,
    client_name: Optional[str] = None,
    token_endpoint_auth_method: Optional[str] = None,
    grant_types: Optional[Iterable[str]] = None,
    scope: Optional[str] = None,
    timeout: float = 30.0,
) -> Dict[str, Any]:
    """Register a client with the server, without an account (RFC 7591
    dynamic client registration, ``POST /oauth/register``; this is how MCP
    clients connect to ams). ``token_endpoint_auth_method="none"`` makes a
    public client (PKCE S256 required); otherwise the answer holds
    ``client_secret``, shown this once. Returns the registration:
    ``client_id``, ``client_secret`` (confidential clients), ``client_name``,
    ``redirect_uris``, ``grant_types``, ``token_endpoint_auth_method``, ...
    Invalid metadata raises ``OAuthError`` with ``code``
    ``invalid_redirect_uri`` or ``invalid_client_metadata`` (400).
    """
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    meta: Dict[str, Any] = {"redirect_uris": list(redirect_uris)}
    if client_name is not None:
        meta["client_name"] = client_name
    if token_endpoint_auth_method is not None:
        meta["token_endpoint_auth_method"] = token_endpoint_auth_method
    if grant_types is not None:
        meta["grant_types"] = list(grant_types)
    if scope is not None:
        meta["scope"] = scope
    req = urllib.request.Request(
        base + "/oauth/register",
        data=json.dumps(meta).encode("utf-8"),
        headers={"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ams-python/" + __version__},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        rh = dict(e.headers.items()) if e.headers is not None else {}
        try:
            err = json.loads(e.read().decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            err = {}
        if not isinstance(err, dict):
            err = {}
        code = err.get("error") or "server_error"
        raise OAuthError(err.get("error_description") or code, status=e.code, code=code, headers=rh, body=err) from None
    except (urllib.error.URLError, OSError) as e:
        raise APIConnectionError("POST /oauth/register: %s" % e) from e
    if not isinstance(data, dict) or not data.get("client_id"):
        raise OAuthError("the registration endpoint answered without a client_id", code="server_error", body=data)
    return data


class OAuth:
    """An OAuth client of one ams server.

    ``client_id`` (``cli_...``) and ``client_secret`` (``ams_cs_...``; ``None``
    for a public client) come from ``ams oauth-clients create``;
    ``redirect_uri`` must be one registered for the client, exactly.
    ``base_url`` is the server root. ``auth_method`` is how a confidential
    client authenticates at the token endpoint: ``"client_secret_basic"``
    (HTTP Basic, the default) or ``"client_secret_post"`` (in the form).
    """

    def __init__(
        self,
        client_id: str,
        client_secret: Optional[str] = None,
        *,
        redirect_uri: str,
        base_url: str = "http://127.0.0.1:8080",
        auth_method: str = "client_secret_basic",
        timeout: Optional[float] = 30.0,
    ) -> None:
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("auth_method must be client_secret_basic or client_secret_post")
        base = base_url.rstrip("/")
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uri = redirect_uri
        self.base_url = base
        self.auth_method = auth_method
        self.timeout = timeout

    def authorization_url(
        self,
        scopes: Union[str, Iterable[str]] = ("read",),
        *,
        state: Optional[str] = None,
        code_verifier: Optional[str] = None,
    ) -> AuthorizationRequest:
        """The URL of ``/oauth/authorize`` for the scopes asked (space-
        separated string or list), with a random ``state`` and a PKCE S256
        challenge unless given."""
        scope = scopes if isinstance(scopes, str) else " ".join(scopes)
        state = state or secrets.token_urlsafe(24)
        if code_verifier:
            digest = hashlib.sha256(code_verifier.encode("ascii")).digest()
            challenge = base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
        else:
            code_verifier, challenge = generate_pkce()
        q = urllib.parse.urlencode(
            [
                ("response_type", "code"),
                ("client_id", self.client_id),
                ("redirect_uri", self.redirect_uri),
                ("scope", scope),
                ("state", state),
                ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
            ]
        )
        return AuthorizationRequest(
            url=self.base_url + "/oauth/authorize?" + q, state=state, code_verifier=code_verifier, code_challenge=challenge
        )

    @staticmethod
    def parse_callback(url: str, expected_state: str) -> str:
        """Read the ``code`` from the redirect to your ``redirect_uri``,
        checking ``state``; raise ``OAuthError`` for an error answer (such
        as ``access_denied`` when the user denied) or a wrong state."""
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        state = (q.get("state") or [""])[0]
        if not secrets.compare_digest(state.encode(), expected_state.encode()):
            raise OAuthError("the state of the callback does not match", code="invalid_state")
        if "error" in q:
            raise OAuthError((q.get("error_description") or [q["error"][0]])[0], code=q["error"][0])
        code = (q.get("code") or [""])[0]
        if not code:
            raise OAuthError("the callback has no code", code="invalid_request")
        return code

    def exchange_code(self, code: str, code_verifier: Optional[str] = None) -> OAuthToken:
        """Exchange an authorization code for tokens (``grant_type=
        authorization_code``); raise ``OAuthError`` (``invalid_grant`` for
        a bad, used or expired code or a wrong verifier)."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri}
        if code_verifier:
            form["code_verifier"] = code_verifier
        return self._token(form)

    def refresh(self, refresh_token: str, *, scope: Optional[str] = None) -> OAuthToken:
        """Get a new access token and a new refresh token (``grant_type=
        refresh_token``). The refresh token used is retired: presenting it
        again revokes the whole grant."""
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        if scope:
            form["scope"] = scope
        return self._token(form)

    def revoke(self, token: str, *, token_type_hint: Optional[str] = None) -> None:
        """Revoke an access or refresh token (RFC 7009)."""
        form = {"token": token}
        if token_type_hint:
            form["token_type_hint"] = token_type_hint
        self._post("/oauth/revoke", form)

    def metadata(self) -> Dict[str, Any]:
        """The authorization server metadata (RFC 8414)."""
        req = urllib.request.Request(
            self.base_url + "/.well-known/oauth-authorization-server",
            headers={"Accept": "application/json", "User-Agent": "ams-python/" + __version__},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))  # type: ignore[no-any-return]
        except urllib.error.HTTPError as e:
            raise OAuthError("metadata: HTTP %d" % e.code, status=e.code, code="server_error") from e
        except (urllib.error.URLError, OSError) as e:
            raise APIConnectionError("GET /.well-known/oauth-authorization-server: %s" % e) from e

    def _token(self, form: Dict[str, str]) -> OAuthToken:
        data = self._post("/oauth/token", form)
        if not isinstance(data, dict) or not data.get("access_token"):
            raise OAuthError("the token endpoint answered without an access_token", code="server_error", body=data)
        return OAuthToken(
            access_token=data["access_token"],
            token_type=data.get("token_type", "Bearer"),
            expires_in=int(data.get("expires_in") or 0),
            refresh_token=data.get("refresh_token"),
            scope=data.get("scope", ""),
            raw=data,
        )

    def _post(self, path: str, form: Dict[str, str]) -> Any:
        form = dict(form)
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
            "User-Agent": "ams-python/" + __version__,
        }
        if self.client_secret and self.auth_method == "client_secret_basic":
            # RFC 6749 section 2.3.1: form-encode, then Basic.
            pair = urllib.parse.quote_plus(self.client_id) + ":" + urllib.parse.quote_plus(self.client_secret)
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        else:
            form["client_id"] = self.client_id
            if self.client_secret:
                form["client_secret"] = self.client_secret
        body = urllib.parse.urlencode(form).encode("ascii")
        req = urllib.request.Request(self.base_url + path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            rh = dict(e.headers.items()) if e.headers is not None else {}
            try:
                err = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                err = {}
            if not isinstance(err, dict):
                err = {}
            code = err.get("error") or "server_error"
            raise OAuthError(
                err.get("error_description") or code,
                status=e.code,
                code=code,
                request_id=rh.get("X-Request-Id"),
                headers=rh,
                body=err,
            ) from None
        except (urllib.error.URLError, OSError) as e:
            raise APIConnectionError("POST %s: %s" % (path, e)) from e
        if not raw.strip():
            return None
        return json.loads(raw.decode("utf-8"))

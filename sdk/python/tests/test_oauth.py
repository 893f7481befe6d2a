"""OAuth helpers: the authorization URL with PKCE, the whole
authorization-code flow driven through the login and consent forms (urllib
and a cookie jar, as a browser would), refresh, reuse detection, revocation
and the token endpoint's errors."""

import base64
import hashlib
import html.parser
import http.cookiejar
import unittest
import urllib.error
import urllib.parse
import urllib.request

import ams

from . import helpers


class Form(html.parser.HTMLParser):
    """The fields of the form whose action is ``action``."""

    def __init__(self, action):
        super().__init__()
        self.action, self.inside, self.fields, self.found = action, False, [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("action") == self.action
            self.found = self.found or self.inside
        elif self.inside and tag == "input" and a.get("name"):
            if a.get("type") == "checkbox" and "checked" not in a:
                return
            self.fields.append((a["name"], a.get("value") or ""))

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False


def form(page, action):
    f = Form(action)
    f.feed(page)
    assert f.found, "no form %s in:\n%s" % (action, page)
    return f.fields


class _Stop(urllib.request.HTTPRedirectHandler):
    """Follows redirects within the server; stops at the client's
    redirect_uri (nothing listens there) and records it."""

    def __init__(self):
        self.callback = None

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if newurl.startswith(helpers.REDIRECT_URI):
            self.callback = newurl
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Browser:
    def __init__(self, base):
        self.base = base
        self.stop = _Stop()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), self.stop)

    def open(self, url, fields=None):
        data = urllib.parse.urlencode(fields).encode() if fields is not None else None
        if url.startswith("/"):
            url = self.base + url
        try:
            with self.opener.open(urllib.request.Request(url, data=data), timeout=10) as r:
                return r.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            if self.stop.callback and e.code in (302, 303):
                return ""
            raise


def sign_in_and_allow(base_url, auth_url):
    """Open the authorization URL in a cookie-keeping 'browser', sign in as
    sdk@example.com and allow; the callback URL the server redirects to."""
    b = Browser(base_url)
    page = b.open(auth_url)  # the login page
    fields = [(k, v) for k, v in form(page, "/login") if k not in ("email", "password")]
    page = b.open("/login", fields + [("email", helpers.EMAIL), ("password", helpers.PASSWORD)])  # the consent page
    assert "SDK Test App" in page, page
    page = b.open("/oauth/authorize", form(page, "/oauth/authorize") + [("action", "allow")])
    assert b.stop.callback, "no redirect to the callback; page:\n" + page
    return b.stop.callback


class OAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()

    def oauth(self, **kw):
        return ams.OAuth(self.s.oauth_client_id, self.s.oauth_client_secret, redirect_uri=helpers.REDIRECT_URI, base_url=self.s.base_url, **kw)

    def test_authorization_url(self):
        req = self.oauth().authorization_url(["read", "messages"])
        self.assertIsInstance(req, ams.AuthorizationRequest)
        u = urllib.parse.urlsplit(req.url)
        self.assertEqual(u.scheme + "://" + u.netloc + u.path, self.s.base_url + "/oauth/authorize")
        q = dict(urllib.parse.parse_qsl(u.query))
        self.assertEqual(
            q,
            {
                "response_type": "code",
                "client_id": self.s.oauth_client_id,
                "redirect_uri": helpers.REDIRECT_URI,
                "scope": "read messages",
                "state": req.state,
                "code_challenge": req.code_challenge,
                "code_challenge_method": "S256",
            },
        )
        self.assertGreaterEqual(len(req.state), 16)
        self.assertRegex(req.code_verifier, r"^[A-Za-z0-9._~-]{43,128}$")
        want = base64.urlsafe_b64encode(hashlib.sha256(req.code_verifier.encode()).digest()).rstrip(b"=").decode()
        self.assertEqual(req.code_challenge, want)
        # Fresh values each time; given ones are used.
        other = self.oauth().authorization_url("read")
        self.assertNotEqual((other.state, other.code_verifier), (req.state, req.code_verifier))
        fixed = self.oauth().authorization_url("read", state="s1", code_verifier="v" * 43)
        self.assertEqual((fixed.state, fixed.code_verifier), ("s1", "v" * 43))
        # RFC 7636 appendix B.
        self.assertEqual(
            self.oauth().authorization_url("read", code_verifier="dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").code_challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        )

    def test_metadata(self):
        m = self.oauth().metadata()
        self.assertEqual(m["token_endpoint"], self.s.base_url + "/oauth/token")
        self.assertIn("S256", m["code_challenge_methods_supported"])

    def test_token_errors(self):
        with self.assertRaises(ams.OAuthError) as cm:
            self.oauth().exchange_code("not-a-code", "v" * 43)
        e = cm.exception
        self.assertEqual((e.status, e.code, e.error), (400, "invalid_grant", "invalid_grant"))
        self.assertTrue(e.error_description)
        # A wrong client secret, both ways of sending it.
        for method in ("client_secret_basic", "client_secret_post"):
            bad = ams.OAuth(self.s.oauth_client_id, "ams_cs_wrong", redirect_uri=helpers.REDIRECT_URI, base_url=self.s.base_url, auth_method=method)
            with self.assertRaises(ams.OAuthError) as cm:
                bad.refresh("ams_rt_unknown")
            self.assertEqual((cm.exception.status, cm.exception.code), (401, "invalid_client"), method)
        with self.assertRaises(ams.OAuthError) as cm:
            self.oauth().refresh("ams_rt_unknown")
        self.assertEqual(cm.exception.code, "invalid_grant")

    def test_register_client(self):
        reg = ams.register_client(self.s.base_url, [helpers.REDIRECT_URI], client_name="SDK Test App", token_endpoint_auth_method="none")  # the name sign_in_and_allow expects
        self.assertTrue(reg["client_id"].startswith("cli_"))
        self.assertNotIn("client_secret", reg)
        self.assertEqual(reg["token_endpoint_auth_method"], "none")
        # The registered public client runs the flow with PKCE.
        pub = ams.OAuth(reg["client_id"], None, redirect_uri=helpers.REDIRECT_URI, base_url=self.s.base_url)
        code, verifier = self.authorize(pub, ["read"])
        self.assertTrue(pub.exchange_code(code, verifier).access_token.startswith("ams_at_"))
        conf = ams.register_client(self.s.base_url + "/v1", [helpers.REDIRECT_URI])
        self.assertTrue(conf["client_secret"].startswith("ams_cs_"))
        for uris, grants, code in (
            (["http://example.com/cb"], None, "invalid_redirect_uri"),
            ([helpers.REDIRECT_URI], ["client_credentials"], "invalid_client_metadata"),
        ):
            with self.assertRaises(ams.OAuthError) as cm:
                ams.register_client(self.s.base_url, uris, grant_types=grants)
            self.assertEqual((cm.exception.status, cm.exception.code), (400, code))

    def test_parse_callback(self):
        self.assertEqual(ams.OAuth.parse_callback(helpers.REDIRECT_URI + "?code=abc&state=s", "s"), "abc")
        with self.assertRaises(ams.OAuthError) as cm:
            ams.OAuth.parse_callback(helpers.REDIRECT_URI + "?code=abc&state=other", "s")
        self.assertEqual(cm.exception.code, "invalid_state")
        with self.assertRaises(ams.OAuthError) as cm:
            ams.OAuth.parse_callback(helpers.REDIRECT_URI + "?error=access_denied&state=s", "s")
        self.assertEqual(cm.exception.code, "access_denied")

    def authorize(self, oauth, scopes):
        """Sign in and allow; the code and the verifier."""
        req = oauth.authorization_url(scopes)
        return ams.OAuth.parse_callback(sign_in_and_allow(self.s.base_url, req.url), req.state), req.code_verifier

    def test_full_flow(self):
        oauth = self.oauth()  # client_secret_basic
        code, verifier = self.authorize(oauth, ["read", "messages"])
        tok = oauth.exchange_code(code, verifier)
        self.assertIsInstance(tok, ams.OAuthToken)
        self.assertTrue(tok.access_token.startswith("ams_at_"))
        self.assertTrue(tok.refresh_token.startswith("ams_rt_"))
        self.assertEqual((tok.token_type.lower(), tok.expires_in, sorted(tok.scopes)), ("bearer", 3600, ["messages", "read"]))
        c = ams.Client(access_token=tok.access_token, base_url=self.s.base_url)
        self.assertIn(self.s.assistant_id, [a.id for a in c.list_assistants()])
        self.assertEqual(c.send_message(self.s.assistant_id, "Hi from OAuth").direction, "outbound")
        with self.assertRaises(ams.PermissionError_) as cm:
            c.create_assistant("write scope needed")
        self.assertEqual(cm.exception.code, "insufficient_scope")

        # Refresh (client_secret_post this time): new tokens, the old
        # refresh token retired; presenting it again revokes the grant.
        post = self.oauth(auth_method="client_secret_post")
        tok2 = post.refresh(tok.refresh_token)
        self.assertNotEqual((tok2.access_token, tok2.refresh_token), (tok.access_token, tok.refresh_token))
        c2 = ams.Client(access_token=tok2.access_token, base_url=self.s.base_url)
        self.assertTrue(c2.list_assistants().data)
        with self.assertRaises(ams.OAuthError) as cm:
            post.refresh(tok.refresh_token)
        self.assertEqual(cm.exception.code, "invalid_grant")
        with self.assertRaises(ams.AuthenticationError):
            c2.list_assistants()

        # A code works once: presenting it again revokes what it gave.
        code, verifier = self.authorize(oauth, "read")
        tok3 = oauth.exchange_code(code, verifier)
        c3 = ams.Client(access_token=tok3.access_token, base_url=self.s.base_url)
        self.assertTrue(c3.list_assistants().data)
        with self.assertRaises(ams.OAuthError) as cm:
            oauth.exchange_code(code, verifier)
        self.assertEqual(cm.exception.code, "invalid_grant")
        with self.assertRaises(ams.AuthenticationError):
            c3.list_assistants()

        # Revocation.
        code, verifier = self.authorize(oauth, "read")
        tok3 = oauth.exchange_code(code, verifier)
        c3 = ams.Client(access_token=tok3.access_token, base_url=self.s.base_url)
        self.assertTrue(c3.list_assistants().data)
        oauth.revoke(tok3.access_token, token_type_hint="access_token")
        with self.assertRaises(ams.AuthenticationError) as cm:
            c3.list_assistants()
        self.assertEqual(cm.exception.code, "invalid_token")


if __name__ == "__main__":
    unittest.main()

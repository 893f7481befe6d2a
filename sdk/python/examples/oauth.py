"""OAuth: act for a user with the authorization-code flow and PKCE.

Register your program first (it prints a client id and secret):

    ams oauth-clients create --email dev@example.com --name "My app" \\
        --redirect-uri http://127.0.0.1:9999/callback
    export AMS_OAUTH_CLIENT_ID=cli_... AMS_OAUTH_CLIENT_SECRET=ams_cs_...

    python3 examples/oauth.py
        prints the URL to open in the browser (sign in, allow), and the
        state and verifier to keep
    python3 examples/oauth.py '<the callback URL>' <state> <verifier>
        exchanges the code and calls the API as the user
"""

import os
import sys

import ams

oauth = ams.OAuth(
    os.environ["AMS_OAUTH_CLIENT_ID"],
    os.environ.get("AMS_OAUTH_CLIENT_SECRET"),  # None for a public client
    redirect_uri=os.environ.get("AMS_OAUTH_REDIRECT_URI", "http://127.0.0.1:9999/callback"),
    base_url=os.environ.get("AMS_BASE_URL", "http://127.0.0.1:8080"),
)

if len(sys.argv) < 4:
    req = oauth.authorization_url(["read", "messages"])
    print("open:", req.url)
    print("state:", req.state)
    print("verifier:", req.code_verifier)
    sys.exit(0)

callback, state, verifier = sys.argv[1:4]
try:
    code = oauth.parse_callback(callback, state)  # checks state; raises on access_denied
    token = oauth.exchange_code(code, verifier)
except ams.OAuthError as e:
    sys.exit("OAuth failed: %s %s" % (e.code, e.message))
print("access token for scopes", token.scopes, "expires in", token.expires_in, "s")

client = ams.Client(access_token=token.access_token, base_url=oauth.base_url)
print("assistants:", [a.name for a in client.iter_assistants()])

if token.refresh_token:  # after the hour; keep the new refresh token (they rotate)
    token = oauth.refresh(token.refresh_token)
    print("refreshed; new refresh token", (token.refresh_token or "")[:12] + "...")

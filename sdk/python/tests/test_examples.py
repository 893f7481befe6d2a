"""The examples of examples/ run against the real server, as a newcomer
would run them (with the dev key and assistant `ams serve --dev` prints)."""

import os
import re
import subprocess
import sys
import unittest

from . import helpers
from .test_oauth import sign_in_and_allow

EXAMPLES = os.path.join(helpers.SDK_DIR, "examples")


class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()

    def run_example(self, name, *args, **env):
        e = dict(os.environ)
        e.update(
            PYTHONPATH=helpers.SDK_DIR,
            AMS_BASE_URL=self.s.base_url,
            AMS_API_KEY=self.s.dev_key,
            AMS_ASSISTANT_ID=self.s.dev_assistant_id,
        )
        e.update(env)
        r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], env=e, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, "%s failed:\n%s%s" % (name, r.stdout, r.stderr))
        return r.stdout

    def test_every_example_is_tested(self):
        self.assertEqual(sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py")), ["oauth.py", "quickstart.py", "webhooks.py"])

    def test_quickstart(self):
        out = self.run_example("quickstart.py")
        self.assertIn("assistant: ", out)
        self.assertIn("Ada", out)
        self.assertRegex(out, r"\n  inbound  Hello! My name is Ada\.\n  outbound ")
        self.assertRegex(out, r"stored as msg_\w+")
        self.assertIn("not found: resource_missing request req_", out)

    def test_webhooks(self):
        out = self.run_example("webhooks.py")
        self.assertRegex(out, r"registered wh_\w+ for http://127\.0\.0\.1:\d+/webhook")
        self.assertRegex(out, r"verified message\.created evt_\w+: ")
        self.assertRegex(out, r"delivery dlv_\w+ attempt 1 status 200")

    def test_oauth(self):
        env = dict(
            AMS_OAUTH_CLIENT_ID=self.s.oauth_client_id,
            AMS_OAUTH_CLIENT_SECRET=self.s.oauth_client_secret,
            AMS_OAUTH_REDIRECT_URI=helpers.REDIRECT_URI,
        )
        out = self.run_example("oauth.py", **env)
        url = re.search(r"open: (\S+)", out).group(1)
        state = re.search(r"state: (\S+)", out).group(1)
        verifier = re.search(r"verifier: (\S+)", out).group(1)
        self.assertIn("code_challenge_method=S256", url)
        callback = sign_in_and_allow(self.s.base_url, url)
        out = self.run_example("oauth.py", callback, state, verifier, **env)
        self.assertIn("access token for scopes ['read', 'messages'] expires in 3600 s", out)
        self.assertIn("SDK Assistant", out)
        self.assertIn("refreshed; new refresh token ams_rt_", out)


if __name__ == "__main__":
    unittest.main()

"""`mypy --strict` on the package, its examples and the README's quick
start, as a user's type checker sees them (Python 3.9, the oldest the
package supports). Skipped when mypy is not installed (pip's `mypy`, or
Debian's `python3-mypy`), unless AMS_REQUIRE_MYPY=1."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from . import helpers


def find_mypy():
    """A command that runs mypy, or None."""
    candidates = [[sys.executable, "-m", "mypy"]]
    if shutil.which("mypy"):
        candidates.append(["mypy"])
    for py in ("python3", "/usr/bin/python3"):
        path = shutil.which(py)
        if path and os.path.realpath(path) != os.path.realpath(sys.executable):
            candidates.append([path, "-m", "mypy"])
    for cmd in candidates:
        try:
            if subprocess.run(cmd + ["--version"], capture_output=True, timeout=60).returncode == 0:
                return cmd
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


class TypeCheckTest(unittest.TestCase):
    def test_mypy_strict(self):
        mypy = find_mypy()
        if mypy is None:
            if os.environ.get("AMS_REQUIRE_MYPY") == "1":
                self.fail("AMS_REQUIRE_MYPY=1 but mypy is not installed")
            self.skipTest("mypy is not installed (pip install mypy, or apt-get install python3-mypy)")
        tmp = tempfile.mkdtemp(prefix="ams-mypy-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        with open(os.path.join(helpers.SDK_DIR, "README.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        quickstart = os.path.join(tmp, "readme_quickstart.py")
        with open(quickstart, "w", encoding="utf-8") as f:
            f.write(blocks[0])
        self.assertIn("send_message_stream", blocks[0])
        r = subprocess.run(
            mypy + ["--strict", "--python-version", "3.9", "--cache-dir", os.path.join(tmp, "cache"), "ams", "examples", quickstart],
            cwd=helpers.SDK_DIR,
            env=dict(os.environ, MYPYPATH=helpers.SDK_DIR),
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()

"""The package as a user installs it: built offline by the in-tree backend
(build_backend/ams_build.py, standard library only), installed into a
fresh virtual environment, imported from there.

No server here; each test builds into its own temporary directory and
never writes into the source tree.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

from . import helpers

SDK_DIR = helpers.SDK_DIR
sys.path.insert(0, os.path.join(SDK_DIR, "build_backend"))
import ams_build  # noqa: E402

try:
    import tomllib
except ImportError:  # < 3.11
    tomllib = None  # type: ignore[assignment]

ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")


def hook(source_dir: str, name: str, *args: str) -> str:
    """Call a PEP 517 hook of the backend the way a frontend does: in a
    fresh interpreter, in the source tree, with backend-path on sys.path."""
    code = "import sys; sys.path.insert(0, 'build_backend'); import ams_build; print(ams_build.%s(*sys.argv[1:]))" % name
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=source_dir, env=ENV, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def read_license() -> bytes:
    """The repository's LICENSE; sdk/python/LICENSE is the same file."""
    with open(os.path.join(helpers.REPO, "LICENSE"), "rb") as f:
        root = f.read()
    with open(os.path.join(SDK_DIR, "LICENSE"), "rb") as f:
        assert f.read() == root, "sdk/python/LICENSE differs from the repository's LICENSE"
    return root


def project() -> dict:
    return ams_build.read_project()


class ReadmeTest(unittest.TestCase):
    def test_readme_lists_every_operation(self):
        # Every operation of the OpenAPI document has a row in the README's
        # "Every endpoint" table naming an ams.Client method that exists:
        # | `GET /v1/keys` | `list_api_keys`, `iter_api_keys` |
        import re

        import ams

        with open(os.path.join(helpers.REPO, "openapi", "openapi.json"), encoding="utf-8") as f:
            doc = json.load(f)
        with open(os.path.join(SDK_DIR, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        rows = dict(re.findall(r"^\| `((?:GET|POST|PUT|PATCH|DELETE) /v1\S*)` \| (.*) \|$", readme, re.M))
        n = 0
        for path, item in doc["paths"].items():
            for method in item:
                if method not in ("get", "post", "put", "patch", "delete"):
                    continue
                n += 1
                op = "%s %s" % (method.upper(), path)
                with self.subTest(op):
                    self.assertIn(op, rows, "the README's table lacks %s" % op)
                    names = re.findall(r"`([a-z_]+)`", rows.pop(op))
                    self.assertTrue(names, op)
                    for name in [names[0]] + [x for x in names if x.startswith("iter_")]:
                        self.assertTrue(callable(getattr(ams.Client, name, None)), "%s: ams.Client.%s is not a method" % (op, name))
        self.assertGreaterEqual(n, 64)
        self.assertEqual(rows, {}, "rows for operations the OpenAPI document does not have")


class BuildTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ams-pkg-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def test_pyproject_declares_no_build_requirement(self):
        with open(os.path.join(SDK_DIR, "pyproject.toml"), "rb") as f:
            doc = ams_build.parse_toml_subset(f.read().decode("utf-8"))
        # Anything in requires is what pip downloads before it can build.
        self.assertEqual(doc["build-system"], {"requires": [], "build-backend": "ams_build", "backend-path": ["build_backend"]})

    @unittest.skipIf(tomllib is None, "tomllib is Python 3.11+")
    def test_fallback_parser_reads_pyproject_as_tomllib_does(self):
        # The parser used before Python 3.11 must read this file exactly
        # as the standard one does.
        with open(os.path.join(SDK_DIR, "pyproject.toml"), "rb") as f:
            text = f.read().decode("utf-8")
        self.assertEqual(ams_build.parse_toml_subset(text), tomllib.loads(text))
        with self.assertRaises(ValueError):
            ams_build.parse_toml_subset("[project]\nlicense = {text = \"MIT\"}\n")

    def test_license_is_mit(self):
        self.assertEqual(project()["license"], "MIT")
        self.assertIn(b"MIT License", read_license())
        self.assertIn(b"the ams authors", read_license())

    def test_version_is_the_package_version(self):
        import ams

        self.assertEqual(project()["version"], ams.__version__)

    def test_wheel_installs_into_a_fresh_venv(self):
        dist = os.path.join(self.tmp, "dist")
        os.mkdir(dist)
        name = hook(SDK_DIR, "build_wheel", dist)
        p = project()
        self.assertEqual(name, "ams_sdk-%s-py3-none-any.whl" % p["version"])
        info = "ams_sdk-%s.dist-info" % p["version"]
        with zipfile.ZipFile(os.path.join(dist, name)) as zf:
            names = sorted(zf.namelist())
            record = zf.read(info + "/RECORD").decode("utf-8").splitlines()
            meta = zf.read(info + "/METADATA").decode("utf-8")
            # RECORD lists every other file with its hash and size.
            listed = {}
            for line in record:
                path, digest, size = line.rsplit(",", 2)
                listed[path] = (digest, size)
            self.assertEqual(sorted(listed), names)
            for path in names:
                if path == info + "/RECORD":
                    continue
                data = zf.read(path)
                want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual(listed[path], (want, str(len(data))), path)
        sources = sorted("ams/" + f for f in os.listdir(os.path.join(SDK_DIR, "ams")) if f.endswith(".py") or f == "py.typed")
        self.assertEqual(names, sorted(sources + [info + "/" + f for f in ("LICENSE", "METADATA", "RECORD", "WHEEL", "top_level.txt")]))
        self.assertIn("ams/py.typed", names)
        self.assertIn("Name: ams-sdk\n", meta)
        self.assertIn("Version: %s\n" % p["version"], meta)
        self.assertIn("Requires-Python: >=3.9\n", meta)
        self.assertIn("Description-Content-Type: text/markdown\n", meta)
        self.assertNotIn("Requires-Dist", meta)
        # The licence: MIT, the repository's LICENSE file.
        self.assertIn("License: MIT\n", meta)
        self.assertIn("Classifier: License :: OSI Approved :: MIT License\n", meta)
        with zipfile.ZipFile(os.path.join(dist, name)) as zf:
            self.assertEqual(zf.read(info + "/LICENSE"), read_license())

        # A fresh environment with nothing in it; a wheel is a zip archive
        # whose files go to site-packages, which is all an installer does
        # for a pure-Python wheel.
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, env=ENV)
        py = os.path.join(venv, "bin", "python")
        purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True).stdout.strip()
        with zipfile.ZipFile(os.path.join(dist, name)) as zf:
            zf.extractall(purelib)
        self.assertEqual(self.imported(py, venv), {"version": p["version"], "client": True, "verify": True, "inside": True})

    def test_sdist_holds_what_builds_the_same_wheel(self):
        dist = os.path.join(self.tmp, "dist")
        os.mkdir(dist)
        p = project()
        name = hook(SDK_DIR, "build_sdist", dist)
        base = "ams_sdk-%s" % p["version"]
        self.assertEqual(name, base + ".tar.gz")
        with tarfile.open(os.path.join(dist, name)) as tar:
            members = sorted(m.name for m in tar.getmembers())
            tar.extractall(self.tmp)
        self.assertIn(base + "/PKG-INFO", members)
        self.assertIn(base + "/pyproject.toml", members)
        self.assertIn(base + "/README.md", members)
        self.assertIn(base + "/LICENSE", members)
        self.assertIn(base + "/build_backend/ams_build.py", members)
        self.assertIn(base + "/ams/client.py", members)
        self.assertFalse([m for m in members if "/tests/" in m or "__pycache__" in m or m.endswith(".pyc")], members)

        # The unpacked sdist builds a wheel byte for byte the one the
        # repository builds (the archives are reproducible).
        from_sdist = os.path.join(self.tmp, "from-sdist")
        from_repo = os.path.join(self.tmp, "from-repo")
        os.mkdir(from_sdist)
        os.mkdir(from_repo)
        w1 = hook(os.path.join(self.tmp, base), "build_wheel", from_sdist)
        w2 = hook(SDK_DIR, "build_wheel", from_repo)
        self.assertEqual(w1, w2)
        with open(os.path.join(from_sdist, w1), "rb") as a, open(os.path.join(from_repo, w2), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_editable_wheel_points_at_the_source_tree(self):
        name = hook(SDK_DIR, "build_editable", self.tmp)
        with zipfile.ZipFile(os.path.join(self.tmp, name)) as zf:
            self.assertEqual(zf.read("ams_sdk.pth").decode("utf-8").strip(), SDK_DIR)
            self.assertFalse([n for n in zf.namelist() if n.startswith("ams/")])

    def test_pip_installs_it_offline(self):
        # `pip install ./sdk/python` with pip's default build isolation and
        # --no-index: it must need nothing from PyPI.
        if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            if os.environ.get("AMS_REQUIRE_PIP_TESTS"):
                self.fail("AMS_REQUIRE_PIP_TESTS is set but %s has no pip" % sys.executable)
            self.skipTest("pip is not installed")
        target = os.path.join(self.tmp, "site")
        r = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir", "--disable-pip-version-check", "--target", target, SDK_DIR],
            env=ENV, capture_output=True, text=True,
        )
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(target, "ams", "py.typed")))
        self.assertEqual(self.imported(sys.executable, target, path=target), {"version": project()["version"], "client": True, "verify": True, "inside": True})

    def imported(self, python: str, prefix: str, path: str = "") -> dict:
        """Import ams with python, run outside the source tree (isolated
        mode: no PYTHONPATH, no user site, no current directory)."""
        code = (
            "import json, os, sys\n"
            "if %r: sys.path.insert(0, %r)\n"
            "import ams\n"
            "print(json.dumps({'version': ams.__version__, 'client': isinstance(ams.Client, type),"
            " 'verify': callable(getattr(ams, 'verify_signature', None)),"
            " 'inside': os.path.realpath(ams.__file__).startswith(os.path.realpath(%r) + os.sep)}))\n"
        ) % (path, path, prefix)
        out = subprocess.run([python, "-I", "-c", code], cwd=self.tmp, env=ENV, check=True, capture_output=True, text=True)
        return json.loads(out.stdout)


if __name__ == "__main__":
    unittest.main()

"""The PEP 517 build backend of the ams SDK, in the standard library alone.

pyproject.toml names it with ``backend-path``, so ``pip install ./sdk/python``
(or ``python -m build``) needs nothing from the network: a frontend installs
a project's ``[build-system] requires`` into an isolated environment, and
with setuptools that meant downloading setuptools (and wheel) from PyPI.
Here ``requires`` is empty.

It reads the standard ``[project]`` table (PEP 621) of pyproject.toml and
builds a pure-Python wheel of the ``ams`` package (py3-none-any), an
editable wheel (PEP 660, a .pth file) and an sdist. Archives are
reproducible: entries are sorted and dated SOURCE_DATE_EPOCH (default
1980-01-01).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

try:  # Python 3.11+
    import tomllib as _tomllib
except ImportError:  # pragma: no cover - exercised on 3.9 and 3.10
    _tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The project directory (sdk/python), which holds pyproject.toml."""

PACKAGES = ["ams"]
"""The import packages the wheel installs (directories under ROOT)."""

SDIST_FILES = ["pyproject.toml", "README.md", "LICENSE", "build_backend/ams_build.py"]
"""The files an sdist holds besides PACKAGES (and the PKG-INFO it writes)."""

_TAG = "py3-none-any"
_SUPPORTED = {"name", "version", "description", "readme", "requires-python", "dependencies", "classifiers", "keywords", "license", "license-files", "urls"}


# ---------------------------------------------------------------- PEP 517 hooks


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = read_project()
    dist_info = _dist_info_name(project)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, data in (("METADATA", metadata(project)), ("WHEEL", _wheel_file())):
        with open(os.path.join(metadata_directory, dist_info, name), "wb") as f:
            f.write(data)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    project = read_project()
    files = [(rel, _read(rel)) for rel in _package_files()]
    return _write_wheel(wheel_directory, project, files)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    project = read_project()
    pth = "%s.pth" % _normalize(project["name"])
    return _write_wheel(wheel_directory, project, [(pth, (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = read_project()
    base = "%s-%s" % (_normalize(project["name"]), project["version"])
    entries = [("PKG-INFO", metadata(project))]
    entries += [(rel, _read(rel)) for rel in sorted(SDIST_FILES + _package_files())]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in entries:
            info = tarfile.TarInfo("%s/%s" % (base, rel))
            info.size, info.mtime, info.mode = len(data), _epoch(), 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    name = base + ".tar.gz"
    with open(os.path.join(sdist_directory, name), "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=_epoch()) as gz:
            gz.write(raw.getvalue())
    return name


# ---------------------------------------------------------------- metadata


def read_project() -> Dict[str, Any]:
    """The [project] table of pyproject.toml, checked for what this backend supports."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    doc = _tomllib.loads(text) if _tomllib is not None else parse_toml_subset(text)
    project = doc["project"]
    unknown = set(project) - _SUPPORTED
    if unknown:
        raise ValueError("pyproject.toml [project]: ams_build does not support %s" % ", ".join(sorted(unknown)))
    for key in ("name", "version"):
        if not isinstance(project.get(key), str) or not project[key]:
            raise ValueError("pyproject.toml [project]: %s must be a non-empty string" % key)
    return project


def metadata(project: Dict[str, Any]) -> bytes:
    """The core metadata (METADATA in a wheel, PKG-INFO in an sdist), version 2.1."""
    lines = ["Metadata-Version: 2.1", "Name: %s" % project["name"], "Version: %s" % project["version"]]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    if project.get("keywords"):
        lines.append("Keywords: %s" % ",".join(project["keywords"]))
    license_ = project.get("license")
    if isinstance(license_, str) and license_:
        lines.append("License: %s" % license_)  # an SPDX expression (PEP 639)
    elif isinstance(license_, dict) and license_.get("text"):
        lines.append("License: %s" % license_["text"])
    for label, url in sorted((project.get("urls") or {}).items()):
        lines.append("Project-URL: %s, %s" % (label, url))
    for c in project.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    for d in project.get("dependencies", []):
        lines.append("Requires-Dist: %s" % d)
    body = ""
    readme = project.get("readme")
    if readme:
        if not isinstance(readme, str):
            raise ValueError("pyproject.toml [project]: readme must be a file name")
        kind = "text/markdown" if readme.lower().endswith(".md") else "text/x-rst" if readme.lower().endswith(".rst") else "text/plain"
        lines.append("Description-Content-Type: %s" % kind)
        body = _read(readme).decode("utf-8")
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _license_files(project: Dict[str, Any]) -> List[str]:
    """The license files (``license-files``, plain names in ROOT) that the
    wheel's .dist-info holds."""
    names = project.get("license-files") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n and "/" not in n and "*" not in n for n in names):
        raise ValueError("pyproject.toml [project]: license-files must list file names in sdk/python (no paths or globs)")
    return list(names)


def parse_toml_subset(text: str) -> Dict[str, Any]:
    """Parse the TOML that pyproject.toml uses, where tomllib is missing (< 3.11).

    It knows tables ([a.b]), comments, and values that are basic strings,
    booleans, integers, or arrays of those (over several lines, with a
    trailing comma); anything else is an error, never a guess.
    """
    doc: Dict[str, Any] = {}
    table = doc
    pending = ""
    for number, line in enumerate(text.splitlines(), 1):
        line = _strip_comment(line).strip()
        if pending:
            pending += " " + line
            if _balanced(pending):
                key, value = pending.split("=", 1)
                table[_key(key)] = _value(value, number)
                pending = ""
            continue
        if not line:
            continue
        m = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if m:
            table = doc
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        if "=" not in line:
            raise ValueError("pyproject.toml line %d: not understood" % number)
        if not _balanced(line):
            pending = line
            continue
        key, value = line.split("=", 1)
        table[_key(key)] = _value(value, number)
    if pending:
        raise ValueError("pyproject.toml: unterminated array")
    return doc


def _strip_comment(line: str) -> str:
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        elif ch == "#" and not quoted:
            return line[:i]
    return line


def _balanced(s: str) -> bool:
    depth, quoted = 0, False
    for i, ch in enumerate(s):
        if ch == '"' and (i == 0 or s[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch == "[":
            depth += 1
        elif not quoted and ch == "]":
            depth -= 1
    return depth == 0


def _key(key: str) -> str:
    key = key.strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        raise ValueError("pyproject.toml: key %r not understood" % key)
    return key


def _value(value: str, number: int) -> Any:
    value = value.strip()
    if value in ("true", "false"):
        return value == "true"
    # Basic strings and arrays of them read as JSON once trailing commas go.
    try:
        return json.loads(re.sub(r",\s*\]", "]", value))
    except ValueError:
        raise ValueError("pyproject.toml line %d: value %s not understood" % (number, value)) from None


# ---------------------------------------------------------------- archives


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_info_name(project: Dict[str, Any]) -> str:
    return "%s-%s.dist-info" % (_normalize(project["name"]), project["version"])


def _wheel_file() -> bytes:
    return ("Wheel-Version: 1.0\nGenerator: ams_build\nRoot-Is-Purelib: true\nTag: %s\n" % _TAG).encode("utf-8")


def _package_files() -> List[str]:
    out = []
    for package in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, package)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if not name.endswith((".pyc", ".pyo")):
                    out.append(os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/"))
    return out


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


def _epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _write_wheel(wheel_directory: str, project: Dict[str, Any], files: List[Tuple[str, bytes]]) -> str:
    dist_info = _dist_info_name(project)
    files = files + [("%s/%s" % (dist_info, f), _read(f)) for f in _license_files(project)]
    files += [
        ("%s/METADATA" % dist_info, metadata(project)),
        ("%s/WHEEL" % dist_info, _wheel_file()),
        ("%s/top_level.txt" % dist_info, ("\n".join(PACKAGES) + "\n").encode("utf-8")),
    ]
    record = []
    for rel, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        record.append("%s,sha256=%s,%d" % (rel, digest, len(data)))
    record.append("%s/RECORD,," % dist_info)
    files.append(("%s/RECORD" % dist_info, ("\n".join(record) + "\n").encode("utf-8")))
    name = "%s-%s-%s.whl" % (_normalize(project["name"]), project["version"], _TAG)
    date = time.gmtime(_epoch())[:6]
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files:
            info = zipfile.ZipInfo(rel, date_time=date)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return name

"""clsolve_build.py: a PEP 517 build backend in the standard library only.

pip builds a package in an isolated environment into which it first
installs the backend's requirements from an index: with setuptools that
step needs the network. This backend requires nothing, so
`pip install ./python` works offline. It builds a pure-Python wheel (and an
sdist) of the `clsolve` package: the files under clsolve/, the metadata
(name, version from clsolve/__init__.py, summary), and RECORD with the
sha256 of every file, as the wheel format (PEP 427) asks.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "clsolve"
TAG = "py3-none-any"


def _version():
    text = open(os.path.join(HERE, NAME, "__init__.py"), encoding="utf-8").read()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _summary():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    m = re.search(r'^description = "([^"]*)"', text, re.M)
    return m.group(1) if m else ""


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: >=3.8\nProvides-Extra: numpy\n" % (NAME, _version(), _summary()))


def _package_files():
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".py", ".typed")):
                full = os.path.join(root, f)
                out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return out


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = "%s-%s.dist-info" % (NAME, _version())
    os.makedirs(os.path.join(metadata_directory, d), exist_ok=True)
    with open(os.path.join(metadata_directory, d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return d


def _wheel(wheel_directory, files):
    version = _version()
    dist = "%s-%s.dist-info" % (NAME, version)
    name = "%s-%s-%s.whl" % (NAME, version, TAG)
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        def add(arcname, data):
            z.writestr(arcname, data)
            record.append("%s,%s,%d" % (arcname, _digest(data), len(data)))
        for arcname, data in files:
            add(arcname, data)
        add(dist + "/METADATA", _metadata().encode())
        add(dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: clsolve_build\n"
                              "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode())
        add(dist + "/top_level.txt", (NAME + "\n").encode())
        record.append(dist + "/RECORD,,")
        z.writestr(dist + "/RECORD", "\n".join(record) + "\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(a, open(f, "rb").read()) for a, f in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # a .pth file that puts this source tree on sys.path
    return _wheel(wheel_directory, [("clsolve_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/clsolve_build.py"] + \
                   [a for a, _ in _package_files()]:
            full = os.path.join(HERE, rel)
            if os.path.exists(full):
                t.add(full, arcname=base + "/" + rel)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name

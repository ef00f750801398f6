"""python/examples/make_kernel_corpus.py and its member list: the committed list follows its rule
and adds up, and the script writes, checks and compresses a corpus (here from a small tarball
made by the test, so that no kernel source is needed)."""

import gzip
import hashlib
import io
import lzma
import os
import subprocess
import sys
import tarfile

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")
SCRIPT = os.path.join(EXAMPLES, "make_kernel_corpus.py")
LIST = os.path.join(EXAMPLES, "data", "kernel_corpus.list")
DIRECTORIES = ("block", "fs", "init", "io_uring", "ipc", "kernel", "lib", "mm")


def read_list(path):
    fields, members = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            key, value = line.rstrip("\n").split(" ", 1)
            if key.endswith(":"):
                fields[key[:-1]] = value
            else:
                members.append((int(key), value))
    return fields, members


def test_the_list_follows_its_rule_and_adds_up():
    fields, members = read_list(LIST)
    names = [name for _, name in members]
    assert names == sorted(names) and len(set(names)) == len(names)
    for name in names:
        top, directory, rest = name.split("/", 2)
        assert top == "linux-source-6.1" and directory in DIRECTORIES, name
        assert rest.endswith((".c", ".h")), name
    assert {name.split("/")[1] for name in names} == set(DIRECTORIES)
    assert int(fields["files"]) == len(members)
    assert int(fields["bytes"]) == sum(size for size, _ in members)
    assert int(fields["bytes"]) >= 64 * 2**20  # the issue asks for 64 MB at least
    assert len(fields["sha256"]) == 64 and fields["package"].startswith("linux-source-6.1 ")


def make_tarball(path, files):
    with tarfile.open(path, "w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("linux-source-6.1/fs/link.c")
        link.type, link.linkname = tarfile.SYMTYPE, "a.c"
        tar.addfile(link)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          check=False, timeout=120)


def test_the_script_writes_checks_and_compresses_a_corpus(tmp_path):
    files = {"linux-source-6.1/fs/b.c": b"int b;\n", "linux-source-6.1/fs/a.c": b"int a;\n",
             "linux-source-6.1/mm/x.h": b"#define X 1\n", "linux-source-6.1/fs/README": b"no\n",
             "linux-source-6.1/drivers/y.c": b"int y;\n", "linux-source-6.1/block/z.c": b"z\xe9\n"}
    tarball, listing = str(tmp_path / "src.tar.xz"), str(tmp_path / "corpus.list")
    make_tarball(tarball, files)
    result = run("--source", tarball, "--list", listing, "--write-list")
    assert result.returncode == 0, result.stderr
    fields, members = read_list(listing)
    expected = b"z\xe9\nint a;\nint b;\n#define X 1\n"  # sorted; no symlink, README, drivers/
    assert members == [(3, "linux-source-6.1/block/z.c"), (7, "linux-source-6.1/fs/a.c"),
                       (7, "linux-source-6.1/fs/b.c"), (12, "linux-source-6.1/mm/x.h")]
    assert fields["sha256"] == hashlib.sha256(expected).hexdigest()
    assert int(fields["bytes"]) == len(expected)

    plain, xz, gz = (str(tmp_path / name) for name in ("c.txt", "c.txt.xz", "c.txt.gz"))
    result = run("--source", tarball, "--list", listing, "--output", plain)
    assert result.returncode == 0, result.stderr
    with open(plain, "rb") as f:
        assert f.read() == expected
    for compressed, module in ((xz, lzma), (gz, gzip)):
        result = run("--source", plain, "--list", listing, "--output", compressed)
        assert result.returncode == 0, result.stderr
        with module.open(compressed) as f:
            assert f.read() == expected
    # Present with the right checksum: left as it is, even without a source.
    result = run("--source", str(tmp_path / "absent.tar.xz"), "--list", listing, "--output", xz)
    assert result.returncode == 0 and "present" in result.stdout, result.stderr

    # A tarball whose member changed: refused, naming it; the output stays absent.
    files["linux-source-6.1/fs/b.c"] = b"long b;\n"
    make_tarball(tarball, files)
    other = str(tmp_path / "other.txt")
    result = run("--source", tarball, "--list", listing, "--output", other)
    assert result.returncode != 0 and "linux-source-6.1/fs/b.c" in result.stderr
    assert not os.path.exists(other)
    # Same sizes, other bytes: the checksum refuses it.
    files["linux-source-6.1/fs/b.c"] = b"int c;\n"
    make_tarball(tarball, files)
    result = run("--source", tarball, "--list", listing, "--output", other)
    assert result.returncode != 0 and "sha256" in result.stderr
    assert not os.path.exists(other)
    # A damaged output is written again.
    with open(plain, "wb") as f:
        f.write(b"damaged")
    result = run("--source", xz, "--list", listing, "--output", plain)
    assert result.returncode == 0 and "present" not in result.stdout, result.stderr
    with open(plain, "rb") as f:
        assert f.read() == expected

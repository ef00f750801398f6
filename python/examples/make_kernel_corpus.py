#!/usr/bin/env python3
"""Writes the kernel corpus of char_lm.py (--corpus kernel): the C source files that
python/examples/data/kernel_corpus.list names, taken from the tarball of Debian's
linux-source-6.1 package and concatenated in the list's order, checked against the list's sha256.

The list's rule: every .c and .h member under the top-level directories block, fs, init,
io_uring, ipc, kernel, lib and mm, sorted by path (Python's string order). Its header gives the
package version the list was made from, the total size and the sha256 of the concatenation.

    python3 python/examples/make_kernel_corpus.py    # /usr/share/ternarycounter/kernel_corpus.txt
    python3 python/examples/make_kernel_corpus.py --output data/kernel_corpus.txt.xz \
        --source /usr/share/ternarycounter/kernel_corpus.txt

An output ending in .xz or .gz is compressed (char_lm.py reads either; data/ at the repository
root is ignored by git and is one of the places char_lm.py looks, so a compressed copy travels
with the working tree). An output that exists with the right checksum is left as it is.
--source takes the tarball or an existing corpus (plain, .xz or .gz) to copy from. --write-list
makes the list again from the tarball (when Debian's archive no longer has the list's version).
"""

import argparse
import gzip
import hashlib
import lzma
import os
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "data", "kernel_corpus.list")
TARBALL = "/usr/src/linux-source-6.1.tar.xz"
INSTALLED = "/usr/share/ternarycounter/kernel_corpus.txt"
PACKAGE = "linux-source-6.1"
DIRECTORIES = ("block", "fs", "init", "io_uring", "ipc", "kernel", "lib", "mm")
SUFFIXES = (".c", ".h")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--output", default=INSTALLED,
                   help="where to write the corpus (.xz or .gz: compressed)")
    p.add_argument("--source", default=TARBALL,
                   help="linux-source-6.1's tarball, or a corpus file to copy")
    p.add_argument("--list", default=LIST, help="the member list")
    p.add_argument("--write-list", action="store_true",
                   help="write the list from --source (the tarball) by the rule, then exit")
    return p.parse_args(argv)


def read_list(path):
    """(header fields, [(size, member path)]) of a member list."""
    fields, members = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, value = line.split(" ", 1)
            if key.endswith(":"):
                fields[key[:-1]] = value
            else:
                members.append((int(key), value))
    return fields, members


def open_text(path, mode="rb", name=None):
    """A plain, .xz or .gz file (as `name` ends, by default `path`), (de)compressed on the fly."""
    name = name or path
    if name.endswith(".xz"):
        return lzma.open(path, mode, preset=6) if "w" in mode else lzma.open(path, mode)
    if name.endswith(".gz"):
        return gzip.open(path, mode)
    return open(path, mode)


def read_corpus(path):
    with open_text(path) as f:
        return f.read()


def installed_version():
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", PACKAGE], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def is_tarball(path):
    return path.endswith((".tar", ".tar.xz", ".tar.gz"))


def by_rule(name):
    """Whether the list's rule selects a member path (linux-source-6.1/DIRECTORY/...)."""
    parts = name.split("/")
    return len(parts) > 2 and parts[1] in DIRECTORIES and name.endswith(SUFFIXES)


def tar_members(source, keep):
    """{member path: bytes} of the tarball's regular files whose path `keep` accepts, in one pass
    over the tarball in its own order."""
    found = {}
    with tarfile.open(source, "r|*") as tar:
        for member in tar:
            if member.isfile() and keep(member.name):
                found[member.name] = tar.extractfile(member).read()
    return found


def write_list(args):
    contents = tar_members(args.source, by_rule)
    names = sorted(contents)
    digest = hashlib.sha256()
    for name in names:
        digest.update(contents[name])
    total = sum(len(data) for data in contents.values())
    with open(args.list, "w", encoding="utf-8") as f:
        f.write("# The kernel corpus of python/examples/char_lm.py (--corpus kernel): these\n"
                "# members of /usr/src/linux-source-6.1.tar.xz, concatenated in this order.\n"
                "# Rule: every .c and .h file (regular members) under the top-level directories\n"
                f"# {' '.join(DIRECTORIES)}, sorted by path.\n"
                "# python/examples/make_kernel_corpus.py writes the corpus (and this list with\n"
                "# --write-list). Lines: size in bytes, member path.\n")
        f.write(f"package: {PACKAGE} {installed_version() or 'unknown'}\n")
        f.write(f"files: {len(names)}\nbytes: {total}\nsha256: {digest.hexdigest()}\n")
        for name in names:
            f.write(f"{len(contents[name])} {name}\n")
    print(f"{args.list}: {len(names)} files, {total} bytes, sha256 {digest.hexdigest()}")


def corpus_from_tarball(source, fields, members):
    wanted = {name for _, name in members}
    contents = tar_members(source, wanted.__contains__)
    missing = [name for _, name in members if name not in contents]
    changed = [name for size, name in members
               if name in contents and len(contents[name]) != size]
    if missing or changed:
        version = installed_version()
        sys.exit(f"make_kernel_corpus.py: {source} ({PACKAGE} {version}) is not the list's "
                 f"({fields.get('package')}): {len(missing)} members missing, {len(changed)} of "
                 f"another size (first: {(missing + changed)[0]}). Install "
                 f"'{PACKAGE}={fields.get('package', '').split()[-1]}' or make the list again "
                 f"with --write-list")
    return b"".join(contents[name] for _, name in members)


def present(path, sha256):
    """Whether `path` holds the corpus (a damaged or foreign file does not)."""
    try:
        return hashlib.sha256(read_corpus(path)).hexdigest() == sha256
    except (OSError, EOFError, lzma.LZMAError):
        return False


def write_atomically(path, data):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    partial = path + ".partial"
    with open_text(partial, "wb", name=path) as f:
        f.write(data)
    os.replace(partial, path)


def main(argv=None):
    args = parse_args(argv)
    if args.write_list:
        if not is_tarball(args.source):
            sys.exit("make_kernel_corpus.py: --write-list reads the tarball (--source)")
        write_list(args)
        return
    fields, members = read_list(args.list)
    expected = fields["sha256"]
    if present(args.output, expected):
        print(f"{args.output}: present, sha256 {expected}")
        return
    if not os.path.exists(args.source):
        sys.exit(f"make_kernel_corpus.py: no {args.source} (Debian: apt-get install {PACKAGE})")
    if is_tarball(args.source):
        data = corpus_from_tarball(args.source, fields, members)
    else:
        data = read_corpus(args.source)
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        sys.exit(f"make_kernel_corpus.py: the text from {args.source} has sha256 {digest}, the "
                 f"list says {expected}")
    write_atomically(args.output, data)
    print(f"{args.output}: {len(members)} files, {len(data)} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Parses the library's, the CLI's and the service's sources with clang
(-fsyntax-only), with the flags of a GCC build's compile_commands.json.

CI builds with GCC. Code that GCC takes and clang does not (clang before 16
cannot capture a structured binding in a lambda) would otherwise break
scripts/fuzz.sh, which builds with clang, and users who build with clang,
without any test seeing it.

Usage: clang_syntax.py BUILD_DIR/compile_commands.json
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = ("src", "server", "tools")


def clang_command(gcc_command):
    """The GCC command as a clang++ syntax check: no output file, no -c."""
    args = shlex.split(gcc_command)[1:]
    out = ["clang++", "-fsyntax-only", "-Wno-unknown-warning-option"]
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg == "-o":
            skip_next = True
        elif arg != "-c":
            out.append(arg)
    return out


def check(entry):
    run = subprocess.run(clang_command(entry["command"]), cwd=entry["directory"],
                         capture_output=True, text=True, check=False)
    return entry["file"], run.returncode, run.stderr


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        entries = [e for e in json.load(f)
                   if os.path.relpath(e["file"], ROOT).split(os.sep)[0] in FOLDERS]
    if not entries:
        sys.exit(f"clang_syntax: no sources of {', '.join(FOLDERS)} in {sys.argv[1]}")
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        results = list(pool.map(check, entries))
    failed = [(name, err) for name, code, err in results if code != 0]
    for name, err in failed:
        print(f"clang_syntax: {os.path.relpath(name, ROOT)}:\n{err}", file=sys.stderr)
    print(f"clang: {len(entries) - len(failed)} of {len(entries)} sources parse")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

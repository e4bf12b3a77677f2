#!/usr/bin/env python3
"""Writes a man page from a built binary's --help, so the two cannot drift.

Usage: gen_man.py --program PATH --name NAME --section N --version-line TEXT
                  [--extra FILE] --out PAGE

Runs `PROGRAM --help` and, for each entry of its "Subcommands:" list,
`PROGRAM SUB --help`, and turns CLI11's help layout into roff: the text
before "Usage:" is the description, "Usage:" the synopsis, "Positionals:"
and "Options:" become tagged paragraphs, and every subcommand a subsection
of COMMANDS. --extra appends hand-written roff (environment, files, exit
status, see also): what --help does not say. Writes PAGE and PAGE.gz
(gzip -9n equivalent: no name, no time stamp, so builds are reproducible).

CLI11 prints an entry as two spaces, the term padded to column 30, then the
description (on the next line, indented to column 30, when the term is
longer). Help text that does not follow that layout is an error, so a change
of CLI11's layout fails the build instead of garbling the page.
"""

import argparse
import gzip
import re
import subprocess
import sys

COLUMN = 30


class HelpFormatError(Exception):
    pass


def run_help(argv):
    r = subprocess.run(argv + ["--help"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise HelpFormatError(f"{' '.join(argv)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


def parse_help(text):
    """-> (description lines, usage, {section: [(term, description)]}, section order)"""
    description, usage, sections, order = [], None, {}, []
    current = None
    for line in text.splitlines():
        if usage is None:
            if line.startswith("Usage: "):
                usage = line[len("Usage: "):].strip()
            else:
                description.append(line)
            continue
        if not line.strip():
            continue
        if not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            sections[current] = []
            order.append(current)
            continue
        if current is None:
            raise HelpFormatError(f"text outside a section after Usage: {line!r}")
        if line.startswith(" " * COLUMN):
            if not sections[current]:
                raise HelpFormatError(f"continuation without an entry: {line!r}")
            term, desc = sections[current][-1]
            sections[current][-1] = (term, (desc + " " + line.strip()).strip())
            continue
        if not line.startswith("  ") or line[2] == " ":
            raise HelpFormatError(f"unexpected indentation: {line!r}")
        if len(line) > COLUMN and line[COLUMN - 1] != " ":
            raise HelpFormatError(f"term runs into column {COLUMN}: {line!r}")
        sections[current].append((line[2:COLUMN].strip(), line[COLUMN:].strip()))
    if usage is None:
        raise HelpFormatError("no 'Usage:' line")
    while description and not description[-1].strip():
        description.pop()
    return description, usage, sections, order


def esc(text):
    """Roff-escapes running text."""
    text = text.replace("\\", "\\e")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def opt(text):
    return esc(text).replace("-", "\\-")


def render_term(term, positional):
    # "-n,--capacity TEXT REQUIRED", "--strategy TEXT=guava64", "NAME TEXT REQUIRED",
    # "SRC TEXT ... REQUIRED"
    parts = term.split(" ")
    head, rest = parts[0], parts[1:]
    notes = []
    if "REQUIRED" in rest:
        rest.remove("REQUIRED")
        notes.append("required")
    if "..." in rest:
        rest.remove("...")
        notes.append("repeatable")
    value = " ".join(rest)
    default = None
    if "=" in value:
        value, default = value.split("=", 1)
    if positional:
        out = f"\\fI{esc(head)}\\fR"
    else:
        out = ", ".join(f"\\fB{opt(f)}\\fR" for f in head.split(","))
        if value:
            out += f" \\fI{esc(value)}\\fR"
    if default is not None:
        notes.append(f"default: {esc(default)}")
    if notes:
        out += " (" + ", ".join(notes) + ")"
    return out


def render_entries(entries, positional):
    out = []
    for term, desc in entries:
        out.append(".TP")
        out.append(render_term(term, positional))
        out.append(esc(desc) if desc else "")
    return out


def render_usage(usage):
    words = usage.split(" ")
    out = [f".B {esc(words[0])}"] if len(words) == 1 else []
    if len(words) > 1:
        line = f"\\fB{esc(words[0])}\\fR"
        for w in words[1:]:
            if w.isalpha() and w.islower():
                line += f" \\fB{esc(w)}\\fR"  # a subcommand name
            else:
                line += f" \\fI{esc(w)}\\fR"
        out.append(line)
    return out


def generate(program, name, section, version_line, extra):
    top = run_help([program])
    description, usage, sections, order = parse_help(top)
    # The program name as installed, not the build path CLI11 may print.
    usage = re.sub(r"^\S*/", "", usage)
    desc_text = "\n".join(description)
    summary = description[0] if description else name
    if summary.startswith(name + ":"):
        summary = summary[len(name) + 1:].strip()
    summary = re.split(r"(?<=[a-z)])[.]\s|[.]$", summary)[0]
    if desc_text.startswith(name + ":"):
        desc_text = desc_text[len(name) + 1:].strip()

    page = [
        f'.TH {name.upper()} {section} "" "{esc(version_line)}" '
        f'"{"User Commands" if section == "1" else "System Administration"}"',
        ".SH NAME",
        f"{name} \\- {esc(summary)}",
        ".SH SYNOPSIS",
        *render_usage(usage),
        ".SH DESCRIPTION",
    ]
    for para in desc_text.split("\n"):
        page += [esc(para), ".PP"] if para.strip() else []
    if page[-1] == ".PP":
        page.pop()
    for sec in order:
        if sec == "Subcommands":
            continue
        page.append(f".SH {sec.upper()}")
        page += render_entries(sections[sec], positional=(sec == "Positionals"))
    subcommands = sections.get("Subcommands", [])
    if subcommands:
        page.append(".SH COMMANDS")
        for sub, _ in subcommands:
            sub_desc, sub_usage, sub_sections, sub_order = parse_help(run_help([program, sub]))
            sub_usage = re.sub(r"^\S*/", "", sub_usage)
            page.append(f'.SS "{esc(sub_usage)}"')
            page.append(esc(" ".join(d.strip() for d in sub_desc if d.strip())))
            for sec in sub_order:
                entries = [e for e in sub_sections[sec] if e[0] != "-h,--help"]
                page += render_entries(entries, positional=(sec == "Positionals"))
    if extra:
        with open(extra, encoding="utf-8") as f:
            page.append(f.read().rstrip("\n"))
    return "\n".join(page) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--section", required=True)
    ap.add_argument("--version-line", required=True)
    ap.add_argument("--extra")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        page = generate(a.program, a.name, a.section, a.version_line, a.extra)
    except HelpFormatError as e:
        print(f"gen_man: {a.name}: {e}", file=sys.stderr)
        return 1
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(page)
    with open(a.out + ".gz", "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            gz.write(page.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""gen_cli_docs.py: turns a program's help source (cli/usage/NAME.txt) into
everything that describes its command line, at build time, so they cannot
disagree:

  --c FILE           C source: const char *SYMBOL(const char *cmd), the text
                     `NAME --help` (cmd NULL) or `NAME CMD --help` prints, and
                     const char *const SYMBOL_commands[] (NULL-terminated)
  --man FILE         the man page NAME(SECTION) in roff (man(7) macros)
  --completion FILE  a bash completion script for NAME
  --json FILE        per command: its options and their listed values (tests)

The markup is described at the top of cli/usage/clsolve.txt. Standard
library only.
"""
import argparse
import json
import re
import sys


def parse(path):
    doc = {"program": None, "section": "1", "summary": "", "synopsis": [], "overview": [],
           "commands": [], "sections": []}
    cur = None
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("#"):
                continue
            if line.startswith("@"):
                word, _, rest = line[1:].partition(" ")
                rest = rest.strip()
                if word == "program":
                    doc["program"], doc["section"] = rest.split()
                    cur = None
                elif word == "summary":
                    doc["summary"] = rest
                    cur = None
                elif word in ("synopsis", "overview"):
                    cur = doc[word]
                elif word == "command":
                    cur = []
                    doc["commands"].append((rest, cur))
                elif word == "section":
                    cur = []
                    doc["sections"].append((rest, cur))
                else:
                    sys.exit("%s:%d: unknown directive @%s" % (path, n, word))
                continue
            if cur is None:
                if line.strip():
                    sys.exit("%s:%d: text outside a block" % (path, n))
                continue
            cur.append(line)
    if not doc["program"]:
        sys.exit("%s: no @program line" % path)
    for block in [doc["synopsis"], doc["overview"]] + [b for _, b in doc["commands"]] + \
            [b for _, b in doc["sections"]]:
        while block and not block[-1].strip():
            block.pop()
    return doc


def text(lines):
    return "\n".join(lines) + "\n"


def c_string(s):
    out = []
    for line in s.splitlines(True):
        e = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.append('    "%s"' % e)
    return "\n".join(out) if out else '    ""'


OPT_RE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
VAL_RE = re.compile(r"(--?[A-Za-z][\w-]*)[ =]([\w.-]+(?:\|[\w.,\[\]-]+)+)")


def spec_column(line):
    """The option part of an option-table line ("  -b, --rhs FILE   text")."""
    m = re.match(r"^ {2,}(-\S.*?)(?: {2,}|$)", line)
    return m.group(1) if m else None


def options(block, program):
    """Options a command block names (usage line, after the program's name,
    and option table) and the values listed for them (`--precond
    none|jacobi`)."""
    opts, vals = [], {}
    for i, line in enumerate(block):
        if line.startswith("usage:"):
            k = line.find(program + " ")
            spec = line[k + len(program):] if k >= 0 else line
        else:
            spec = spec_column(line)
        if spec is None:
            continue
        for o in OPT_RE.findall(spec):
            if o not in opts:
                opts.append(o)
        for o, v in VAL_RE.findall(spec):
            words = [w for w in re.split(r"[|\[\],]", v) if w and not w.isupper() and ".." not in w]
            # a file name's forms (-o OUT.csv|.ply|.vtk) are no words to
            # offer: the shell completes file names there
            if any("." in w or any(ch.isupper() for ch in w) for w in words):
                continue
            if words:
                vals[o] = words
    return opts, vals


def precond_aliases(path):
    """PETSc's names of the preconditioners, as the command line takes them
    (solver/pc/kinds.def: PC_KIND(id, "name", "alias alias", kind))."""
    out = []
    for m in re.finditer(r'^PC_KIND\(\w+,\s*"[^"]*",\s*"([^"]*)"', open(path, encoding="utf-8").read(), re.M):
        out += m.group(1).split()
    return out


def roff_escape(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def roff_verbatim(lines):
    out = [".RS 4", ".nf"]
    for l in lines:
        out.append(roff_escape(l) if l.strip() else "")
    out += [".fi", ".RE"]
    return out


def roff_prose(lines):
    out, para, verb = [], [], []

    def flush():
        if para:
            out.append(".PP")
            out.extend(roff_escape(l.strip()) for l in para)
            para.clear()
        if verb:
            out.extend(roff_verbatim(verb))
            verb.clear()

    for l in lines:
        if not l.strip():
            flush()
        elif l.startswith("  "):
            if para:
                flush()
            verb.append(l[2:])
        else:
            if verb:
                flush()
            para.append(l)
    flush()
    return out


def man(doc, version):
    name, sec = doc["program"], doc["section"]
    title = {"1": "User Commands", "8": "System Administration"}.get(sec, "")
    out = ['.\\" generated by cmake/gen_cli_docs.py from cli/usage/%s.txt: do not edit' % name,
           '.TH %s %s "" "clsolve %s" "%s"' % (name.upper(), sec, version, title),
           ".SH NAME", "%s \\- %s" % (name, roff_escape(doc["summary"])), ".SH SYNOPSIS"]
    out += [".nf"] + [roff_escape(l) for l in doc["synopsis"]] + [".fi"]
    secs = list(doc["sections"])
    desc = [s for s in secs if s[0] == "DESCRIPTION"]
    for t, b in desc:
        out.append(".SH DESCRIPTION")
        out += roff_prose(b)
    if doc["commands"]:
        out.append(".SH COMMANDS")
        for cname, b in doc["commands"]:
            out.append(".SS %s" % roff_escape(cname))
            out += roff_verbatim(b)
    else:
        out.append(".SH OPTIONS")
        out += roff_verbatim(doc["overview"])
    for t, b in secs:
        if t == "DESCRIPTION":
            continue
        out.append(".SH %s" % roff_escape(t))
        out += roff_prose(b)
    return "\n".join(out) + "\n"


def completion(doc, info):
    name = doc["program"]
    fn = "_" + re.sub(r"\W", "_", name)
    L = ["# bash completion for %s: generated by cmake/gen_cli_docs.py from" % name,
         "# cli/usage/%s.txt; do not edit. Installed as" % name,
         "# share/bash-completion/completions/%s." % name,
         "%s()" % fn, "{", "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}",
         "    local opts=''"]
    if doc["commands"]:
        cmds = " ".join(c for c, _ in doc["commands"])
        L += ["    if [ \"$COMP_CWORD\" -eq 1 ]; then",
              "        COMPREPLY=($(compgen -W '%s help --help --version' -- \"$cur\"))" % cmds,
              "        return 0", "    fi", "    case \"${COMP_WORDS[1]}\" in"]
        for c, _ in doc["commands"]:
            opts, vals = info[c]["options"], info[c]["values"]
            L.append("    %s)" % c)
            if vals:
                L.append("        case \"$prev\" in")
                for o, v in vals.items():
                    L.append("        %s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return 0 ;;"
                             % (o, " ".join(v)))
                L.append("        esac")
            L.append("        opts='%s' ;;" % " ".join(opts))
        L += ["    help) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return 0 ;;" % cmds, "    esac"]
    else:
        opts, vals = info[None]["options"], info[None]["values"]
        if vals:
            L.append("    case \"$prev\" in")
            for o, v in vals.items():
                L.append("    %s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return 0 ;;"
                         % (o, " ".join(v)))
            L.append("    esac")
        L.append("    opts='%s'" % " ".join(opts))
    L += ["    if [[ $cur == -* ]]; then",
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))",
          "    else",
          "        COMPREPLY=($(compgen -f -- \"$cur\"))",
          "    fi", "    return 0", "}",
          "complete -o filenames -o bashdefault -F %s %s" % (fn, name)]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--symbol", required=True)
    ap.add_argument("--version", default="")
    ap.add_argument("--c")
    ap.add_argument("--man")
    ap.add_argument("--completion")
    ap.add_argument("--json")
    ap.add_argument("--precond-aliases", help="solver/pc/kinds.def: PETSc's names, completed too")
    a = ap.parse_args()
    doc = parse(a.source)
    info = {}
    if doc["commands"]:
        for c, b in doc["commands"]:
            o, v = options(b, doc["program"])
            info[c] = {"options": o, "values": v}
    o, v = options(doc["overview"] if not doc["commands"] else [], doc["program"])
    info[None] = {"options": o, "values": v}
    if a.precond_aliases:
        # the help lists the canonical names; --precond takes PETSc's too
        # (pc_parse_name), so TAB offers them after those
        extra = precond_aliases(a.precond_aliases)
        for i in info.values():
            if "--precond" in i["values"]:
                i["values"]["--precond"] += [w for w in extra if w not in i["values"]["--precond"]]
    outs = {}
    if a.c:
        sym = a.symbol
        C = ["/* generated by cmake/gen_cli_docs.py from cli/usage/%s.txt: do not edit */"
             % doc["program"], "#include <stddef.h>", "#include <string.h>", ""]
        C.append("static const char help_overview[] =\n%s;\n" % c_string(text(doc["overview"])))
        for i, (c, b) in enumerate(doc["commands"]):
            C.append("static const char help_%d[] =\n%s;\n" % (i, c_string(text(b))))
        C.append("const char *const %s_commands[] = {%s};\n" % (
            sym, ", ".join(['"%s"' % c for c, _ in doc["commands"]] + ["NULL"])))
        C.append("const char *%s(const char *cmd)\n{\n    if (!cmd)\n        return help_overview;"
                 % sym)
        for i, (c, _) in enumerate(doc["commands"]):
            C.append('    if (!strcmp(cmd, "%s"))\n        return help_%d;' % (c, i))
        C.append("    return NULL;\n}\n")
        outs[a.c] = "\n".join(C)
    if a.man:
        outs[a.man] = man(doc, a.version)
    if a.completion:
        outs[a.completion] = completion(doc, info)
    if a.json:
        outs[a.json] = json.dumps({"program": doc["program"],
                                   "commands": {k if k else "": v for k, v in info.items()}},
                                  indent=1) + "\n"
    for path, content in outs.items():
        try:
            old = open(path, encoding="utf-8").read()
        except OSError:
            old = None
        if old != content:  # unchanged outputs keep their time stamps
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)


if __name__ == "__main__":
    main()

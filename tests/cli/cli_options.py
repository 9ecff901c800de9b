#!/usr/bin/env python3
"""cli_options.py: the options clsolve's code accepts against the ones its
help documents (cli/usage/clsolve.txt, as the build parsed it into
completion/clsolve.json). Every option string a subcommand's source passes
to cli_opt() must appear in that subcommand's help, and every option the
help's option table lists must be a string in the subcommand's source, so
--help, the man page and the bash completion cannot drift from the code.

  cli_options.py CLI_DIR completion/clsolve.json USAGE_TXT
"""
import json
import os
import re
import sys

cli_dir, info_path, usage = sys.argv[1:4]
info = json.load(open(info_path))["commands"]
blocks, cur = {}, None
for line in open(usage, encoding="utf-8"):
    if line.startswith("@command "):
        cur = line.split()[1]
        blocks[cur] = ""
    elif line.startswith("@"):
        cur = None
    elif cur:
        blocks[cur] += line

# the commands each source file implements
CLIENT = ["submit", "status", "wait", "fetch", "cancel", "rm"]
files = {}
for f in sorted(os.listdir(cli_dir)):
    m = re.match(r"cmd_(\w+)\.c$", f)
    if m:
        files[f] = CLIENT if f == "cmd_client.c" else [m.group(1)]
OPT = re.compile(r'cli_opt\(&?\w+, "(-[^"]+)", (?:"(-[^"]+)"|NULL)')
# cli_precond() (clsolve.c) takes the preconditioner's options by the keys of
# solver/pc/pc_options.c ("precond_degree" -> --precond-degree): a file that
# calls it accepts every one of them
pc_src = open(os.path.join(cli_dir, "..", "solver", "pc", "pc_options.c"), encoding="utf-8").read()
pc_keys = re.search(r"pc_keys\[\] = \{(.*?)\};", pc_src, re.S).group(1)
PRECOND_OPTS = {"--" + k.replace("_", "-") for k in re.findall(r'"(\w+)"', pc_keys)}
# cli_solve_param() (clsolve.c) takes the solve's parameters by the keys of
# its table ("tol" -> --tol), checked by net/job_params.c: a file that calls
# it accepts every one of them
cl_src = open(os.path.join(cli_dir, "clsolve.c"), encoding="utf-8").read()
sp_keys = re.search(r"int cli_solve_param\(.*?keys\[\] = \{(.*?)\};", cl_src, re.S).group(1)
SOLVE_OPTS = {"--" + k for k in re.findall(r'"(\w+)"', sp_keys)}
fails = []
for f, cmds in files.items():
    src = open(os.path.join(cli_dir, f), encoding="utf-8").read()
    for c in cmds:
        if c not in info:
            fails.append("%s: command '%s' has no help block" % (f, c))
    accepted = set()
    for a, b in OPT.findall(src):
        accepted.update(x for x in (a, b) if x)
    if "cli_precond(" in src:
        accepted |= PRECOND_OPTS
    if "cli_solve_param(" in src:
        accepted |= SOLVE_OPTS
    # a file with several commands: an option belongs to one of them
    for o in sorted(accepted):
        if not any(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), blocks.get(c, "")) for c in cmds):
            fails.append("%s accepts %s, which no help of %s mentions" % (f, o, "/".join(cmds)))
    for c in cmds:
        for o in info.get(c, {}).get("options", []):
            if o in ("-h", "--help"):
                continue  # answered in clsolve.c for every command
            if '"%s"' % o not in src and o not in accepted:
                fails.append("the help of '%s' lists %s, which %s does not accept" % (c, o, f))
for c in info:
    if c and not any(c in cmds for cmds in files.values()):
        fails.append("the help has a command '%s' that no cmd_*.c implements" % c)
for x in fails:
    print("FAIL:", x)
print("cli_options: %d files, %d commands, %d problems" % (len(files), len(info) - 1, len(fails)))
sys.exit(1 if fails else 0)

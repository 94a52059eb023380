# Runs a command under an OCI seccomp profile (the format of deploy/seccomp/), loaded with libseccomp as a
# container runtime would load it, so the profile can be tried without a cluster.
#   /usr/bin/python3 scripts/lib/under-seccomp.py PROFILE DROP COMMAND ARGS...
# DROP is a comma-separated list of system calls to leave out of the profile ("" for none).
# Needs libseccomp's Python binding (Debian: python3-seccomp). Used by scripts/seccomp.sh and tests/it/fleet.rs.
import json
import os
import sys

import seccomp

profile, drop, argv = sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3:]
p = json.load(open(profile))
f = seccomp.SyscallFilter(seccomp.ERRNO(p["defaultErrnoRet"]))
ops = {"SCMP_CMP_EQ": seccomp.EQ, "SCMP_CMP_NE": seccomp.NE}
for rule in p["syscalls"]:
    for name in rule["names"]:
        if name in drop:
            continue
        try:
            args = [seccomp.Arg(a["index"], ops[a["op"]], a["value"]) for a in rule.get("args", [])]
            f.add_rule(seccomp.ALLOW, name, *args)
        except (RuntimeError, ValueError, OSError):
            pass  # a name this architecture does not have
f.load()
os.execv(argv[0], argv)

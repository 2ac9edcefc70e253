"""Run a vyre-build CLI command or an scons build under an audit hook; used by
test_frontend_confinement.py as `python audit_run.py LOG cli|scons ARGS...`.

Every path opened and every process started is written to LOG (JSON) at exit."""

import atexit
import json
import os
import sys

LOG, MODE, ARGS = sys.argv[1], sys.argv[2], sys.argv[3:]
SPAWN = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork"}
opened: list[str] = []
started: list[str] = []


def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        opened.append(os.fsdecode(args[0]))
    elif event in SPAWN:
        started.append(f"{event} {args!r}")


def dump():
    with open(LOG, "w", encoding="utf-8") as f:
        json.dump({"opened": [os.path.abspath(p) for p in opened], "started": started}, f)


atexit.register(dump)
sys.addaudithook(hook)
if MODE == "cli":
    from vyre_build.cli import main

    sys.exit(main(ARGS))
import SCons.Script  # noqa: E402

sys.argv = ["scons", *ARGS]
SCons.Script.main()

#!/usr/bin/env python3
"""A limiter process for ratelab's protocol tests that needs no Redis: it reads its stdin one
read() at a time and allows every check, answering with `remaining` set to how many checks came in
the same read, so a test sees which checks ratelab wrote together."""
import json
import os
import sys


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def reads():
    """The complete lines of each read(); a line split across reads counts with its end."""
    partial = b""
    while chunk := os.read(0, 1 << 20):
        *complete, partial = (partial + chunk).split(b"\n")
        yield complete


def main():
    setup = None
    for lines in reads():
        for line in lines:
            if setup is None:
                setup = json.loads(line)
                say({"type": "ready", "protocol": 1, "adapter": "turns", "library": "fixture",
                     "version": "1.turns", "client": "none"})
                continue
            check = json.loads(line)
            say({"id": check["id"], "allowed": True, "remaining": len(lines)})


if __name__ == "__main__":
    main()

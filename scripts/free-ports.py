#!/usr/bin/env python3
"""free-ports.py COUNT OWNER_PID [HOST]: prints a port P such that P .. P+COUNT-1
are free on HOST (default 127.0.0.1) and held by no other live shoal run.

Ports are taken below Linux's ephemeral range (32768-60999, where outgoing
connections get theirs), bind-tested, and recorded in a registry that every
train-local shares, under a lock, so two runs started in the same second never
pick the same ports. An entry lasts as long as its owner (the supervisor's
PID) lives: a dead owner's ports are free again."""
import fcntl
import os
import random
import socket
import sys

LOW, HIGH = 10000, 32000  # below the ephemeral range
REGISTRY = os.path.join(os.environ.get("XDG_RUNTIME_DIR") or "/tmp", "shoal-ports")


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def bindable(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: free-ports.py COUNT OWNER_PID [HOST]")
    count, owner = int(sys.argv[1]), int(sys.argv[2])
    host = sys.argv[3] if len(sys.argv) == 4 else "127.0.0.1"
    if not 1 <= count <= 1000:
        sys.exit("free-ports.py: COUNT must be 1..1000")
    try:
        base = claim(count, owner, host)
    except OSError as e:  # a registry that cannot be read or written: a full or missing directory
        sys.exit(f"free-ports.py: cannot use the port registry '{REGISTRY}': {e.strerror or e}")
    if base is None:
        sys.exit(f"free-ports.py: found no {count} free ports in {LOW}-{HIGH}")
    print(base)


def claim(count, owner, host):
    """The first of COUNT ports now recorded as OWNER's, or None where none were found."""
    fd = os.open(REGISTRY, os.O_RDWR | os.O_CREAT, 0o666)
    with os.fdopen(fd, "r+") as registry:
        fcntl.flock(registry, fcntl.LOCK_EX)
        held = []
        for line in registry.read().splitlines():
            try:
                pid, base, n = (int(x) for x in line.split())
            except ValueError:
                continue
            if alive(pid) and pid != owner:
                held.append((pid, base, n))
        rng = random.Random(os.getpid() ^ int.from_bytes(os.urandom(4), "little"))
        for _ in range(200):
            base = rng.randrange(LOW, HIGH - count)
            if any(base < b + n and b < base + count for _, b, n in held):
                continue
            if all(bindable(host, p) for p in range(base, base + count)):
                held.append((owner, base, count))
                registry.seek(0)
                registry.truncate()
                registry.write("".join(f"{p} {b} {n}\n" for p, b, n in held))
                registry.flush()
                return base
    return None


if __name__ == "__main__":
    main()

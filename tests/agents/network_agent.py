"""An agent with the network that tries the host: run inside the agent's sandbox by test_agent_network.py.

Arguments: the outside server's ``address:port`` and the marker it answers with, the port of a server on
the host's loopback (the session's Prefect API), and the name of an abstract unix socket the host listens
on. Exit 0: the outside server answered with the marker and nothing of the host's loopback or abstract
sockets answered; 1: something of the host's was reached (printed); 2: the outside server was not reached.
"""

from __future__ import annotations

import socket
import sys
import urllib.request

GATEWAY = "10.0.2.2"
"""slirp4netns's gateway: with host loopback allowed, its ports are the host's 127.0.0.1 ports."""


def reached_tcp(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=3):
            return True
    except OSError:
        return False


def reached_abstract(name: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect("\0" + name)
        except OSError:
            return False
        return True


def main(outside: str, marker: str, loopback_port: int, abstract: str) -> int:
    found = [f"tcp {h}:{loopback_port}" for h in ("127.0.0.1", GATEWAY) if reached_tcp(h, loopback_port)]
    if reached_abstract(abstract):
        found.append(f"abstract unix socket {abstract}")
    if found:
        print("reached the host:", ", ".join(found))
        return 1
    try:
        with urllib.request.urlopen(f"http://{outside}/", timeout=10) as answer:
            body = answer.read().decode()
    except OSError as exc:
        print(f"outside server {outside} not reached: {exc}")
        return 2
    print(f"outside server answered: {body}")
    return 0 if body == marker else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))

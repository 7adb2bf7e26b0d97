"""Free loopback ports for servers a script starts later (pservers named on a command line).

A port is picked below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range)
and checked to bind. A port from the ephemeral range (what binding port 0 returns) can be
taken between the pick and the server's bind by any socket the kernel numbers itself: a
client's source port, or Open MPI's own listeners under mpirun, after which the server
cannot listen and its clients reach the wrong process.

    python3 loopback_ports.py N     # prints N ports, space-separated
"""
import random
import socket
import sys


def free_ports(n):
    """n distinct loopback ports, each free when checked, below the ephemeral range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768  # Linux's default
    low = max(1024, ephemeral - 16384)
    if ephemeral - low < 4 * n:
        raise RuntimeError("the ephemeral range starts at %d: too few ports below it" % ephemeral)
    rng = random.SystemRandom()
    ports = []
    while len(ports) < n:
        port = rng.randrange(low, ephemeral)
        if port in ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    return ports


if __name__ == "__main__":
    print(*free_ports(int(sys.argv[1])))

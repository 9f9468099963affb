"""Whether a TCP port on an address of this machine is taken, before a server of ftops tries to listen there (the
embedded PostgreSQL, the local Airflow, a private Spark cluster, profiling copies' UIs): each says which port, where
the server itself would only log it.

Binding is the test (with ``SO_REUSEADDR``, so a port a closed connection left in TIME_WAIT counts as free, as it is
for the server): O(1) per port.

    >>> port_taken("127.0.0.1", 0)  # port 0: the kernel picks a free one
    False
"""

from __future__ import annotations

import socket


def port_taken(host: str, port: int) -> bool:
    """Whether something listens on (or otherwise holds) ``port`` at ``host``."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False

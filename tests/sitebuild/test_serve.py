"""The development and test server (``sitebuild/serve.py``): its listen backlog.

A browser opens many connections at once (scripts, styles, fonts, the model's pieces, in
several tabs). Connections the kernel cannot queue are dropped and retried only a second or
more later, which makes page loads slow by chance; the server queues far more than one
page opens.
"""

from __future__ import annotations

import socket

from sitebuild.serve import make_server

CONNECTIONS = 64  # more than a few tabs of one page open at once


def test_the_server_queues_many_connections_before_it_accepts_any(tmp_path):
    server = make_server(tmp_path)  # bound and listening, not yet accepting
    clients = []
    try:
        for _ in range(CONNECTIONS):
            client = socket.socket()
            client.settimeout(5)  # a dropped connection would wait for the kernel's retry
            client.connect(server.server_address)  # the kernel completes it from the queue
            clients.append(client)
        assert len(clients) == CONNECTIONS
    finally:
        for client in clients:
            client.close()
        server.server_close()

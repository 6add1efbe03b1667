"""The development and test server (``sitebuild/serve.py``): its listen backlog, and its
silence when a browser hangs up mid-download.

A browser opens many connections at once (scripts, styles, fonts, the model's pieces, in
several tabs). Connections the kernel cannot queue are dropped and retried only a second or
more later, which makes page loads slow by chance; the server queues far more than one
page opens.
"""

from __future__ import annotations

import socket
import struct

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


def test_a_client_that_hangs_up_mid_response_leaves_no_traceback_and_other_errors_do(tmp_path, capsys):
    (tmp_path / "big.bin").write_bytes(bytes(32 << 20))  # more than the socket buffers hold
    server = make_server(tmp_path)
    try:
        client = socket.create_connection(server.server_address)
        client.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a reset, as a browser that leaves the page
        request, address = server.get_request()
        server.process_request_thread(request, address)  # the handler's thread, run here to its end
        assert "Traceback" not in capsys.readouterr().err
        try:
            raise ValueError("a fault of the server's own")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 0))
        assert "ValueError: a fault of the server's own" in capsys.readouterr().err
    finally:
        server.server_close()

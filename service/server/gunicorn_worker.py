"""The web process's gunicorn worker: gunicorn's threaded worker whose client connections time out.

A slow or unfinished request must cost its client a connection, never a worker: with gunicorn's
sync worker a request that announces a body and never sends it holds the whole worker, and so
every other client waiting on it, until gunicorn's timeout kills the worker. Here:

- requests are served by `SIGNALS_WEB_THREADS` threads per worker (gunicorn's `gthread` worker),
  and a kept-alive connection waits between requests in the worker's poller, holding no thread;
- every blocking read or write on a client's socket gives up after `SIGNALS_CLIENT_TIMEOUT_SECONDS`
  without progress (`TimedSocket`). A body that stalls is answered 408 problem+json by the app
  (service/http/resources/json_body.py); headers that stall are answered 408 here; an answer the client
  stops reading is abandoned. In each case the connection is closed and its thread freed.

gunicorn sets a connection's socket blocking (`setblocking(True)`) before each request, which
would clear a timeout set once; `TimedSocket` turns that call into "blocking, with the timeout".
A timeout surfaces as `StalledClient`, a ConnectionResetError, so gunicorn treats it as the client
going away (logged at debug level, not as an error with a traceback per slow client).
"""

from __future__ import annotations

import errno
import socket

from gunicorn.workers.gthread import TConn, ThreadWorker

from service.server.gunicorn_errors import problem_response


class StalledClient(ConnectionResetError):
    """The client sent or read nothing for the connection's timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(errno.ECONNRESET, f"no progress from the client for {seconds:g} s")


REQUEST_TIMEOUT = problem_response(408, "Request Timeout", "The request was not completed in time; send it again")


class TimedSocket(socket.socket):
    """A client connection whose blocking reads and writes give up after `io_timeout` seconds."""

    io_timeout: float = 5.0
    stalled = False   # a read or write of the current request timed out
    answered = False  # something of an answer was written for the current request

    @classmethod
    def adopt(cls, sock: socket.socket, io_timeout: float) -> TimedSocket:
        timed = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        timed.io_timeout = io_timeout
        return timed

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(self.io_timeout)
        else:
            super().setblocking(False)

    def _stalled(self) -> StalledClient:
        self.stalled = True
        return StalledClient(self.io_timeout)

    def recv(self, *args, **kwargs) -> bytes:
        try:
            return super().recv(*args, **kwargs)
        except TimeoutError:
            raise self._stalled() from None

    def recv_into(self, *args, **kwargs) -> int:
        try:
            return super().recv_into(*args, **kwargs)
        except TimeoutError:
            raise self._stalled() from None

    def send(self, *args, **kwargs) -> int:
        self.answered = True
        try:
            return super().send(*args, **kwargs)
        except TimeoutError:
            raise self._stalled() from None

    def sendall(self, *args, **kwargs) -> None:
        self.answered = True
        try:
            super().sendall(*args, **kwargs)
        except TimeoutError:
            raise self._stalled() from None

    def begin_request(self) -> None:
        self.stalled = self.answered = False


class Worker(ThreadWorker):
    """gunicorn's threaded worker with `TimedSocket` client connections."""

    client_timeout: float = TimedSocket.io_timeout

    def init_process(self) -> None:
        from service.settings import Settings

        self.client_timeout = Settings.from_env().client_timeout_seconds
        super().init_process()

    def accept(self, listener) -> None:
        # gthread's accept, with the accepted socket adopted as a TimedSocket.
        try:
            client_sock, client_addr = listener.accept()
            self.nr_conns += 1
            client_sock = TimedSocket.adopt(client_sock, self.client_timeout)
            client_sock.setblocking(True)
            conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())
            self.enqueue_req(conn)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise

    def handle(self, conn):
        sock = conn.sock
        if isinstance(sock, TimedSocket):
            sock.begin_request()
        result = super().handle(conn)
        if isinstance(sock, TimedSocket) and sock.stalled and not sock.answered:
            # Headers that never finished: gunicorn gave up without an answer. Say why (best
            # effort: a client that reads nothing either is simply dropped).
            try:
                sock.settimeout(0.5)
                socket.socket.sendall(sock, REQUEST_TIMEOUT)
            except OSError:
                pass
        return result

    def _keepalive_after(self, conn, keepalive):
        # A request whose client stalled is over: no drain of the rest of its body (which would
        # hold this thread for another timeout), the connection is closed.
        if isinstance(conn.sock, TimedSocket) and conn.sock.stalled:
            return False
        return super()._keepalive_after(conn, keepalive)  # type: ignore[misc]  # gthread.py has it; its stub does not

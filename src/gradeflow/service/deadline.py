"""uvicorn's HTTP/1.1 protocol with a deadline on a request's headers.

uvicorn bounds only the idle time between two requests of a kept-alive connection; a client that
sends its headers one byte at a time holds a connection (and a file descriptor) for as long as it
likes. Here the headers must be complete within ``seconds`` of the connection, or of the previous
response; otherwise the connection is closed without an answer. The body has its own deadline, kept
by the receiver while it reads it (:func:`gradeflow.service.webhook.create_app`).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["header_deadline_protocol"]


class _HeaderDeadline(H11Protocol):
    seconds = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._previous = self.cycle
        self._timer: asyncio.TimerHandle | None = self.loop.call_later(self.seconds, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not self._previous:  # a new request's headers are complete
            self._disarm()

    def on_response_complete(self) -> None:
        self._disarm()
        self._arm()  # for the next request on this connection
        super().on_response_complete()  # may start a pipelined request whose headers are already in
        if self.cycle is not self._previous or self.transport.is_closing():
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _expire(self) -> None:
        self._timer = None
        if not self.transport.is_closing():
            self.transport.close()


def header_deadline_protocol(seconds: float) -> type[H11Protocol]:
    """The protocol class to give ``uvicorn.run(http=...)``: headers within ``seconds`` or the connection closes."""
    return type("HeaderDeadlineProtocol", (_HeaderDeadline,), {"seconds": seconds})

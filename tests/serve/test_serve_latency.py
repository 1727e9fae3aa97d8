"""`loomc serve` answers on a keep-alive connection without Nagle's delay: a socket without
TCP_NODELAY holds a response's body (the second write) until the client's delayed ACK, 40 ms
later, on every request after the first."""

from __future__ import annotations

import statistics
import time

import httpx
from servekit import SECRET, ServeProcess


def test_keep_alive_requests_do_not_wait_for_delayed_acks(keyed_server: ServeProcess) -> None:
    headers = {"authorization": f"Bearer {SECRET}"}
    with httpx.Client(base_url=keyed_server.url, headers=headers) as client:
        client.get("/v1/models").raise_for_status()
        times = []
        for _ in range(15):
            t = time.perf_counter()
            client.get("/v1/models").raise_for_status()
            times.append(time.perf_counter() - t)
    # with the stall every request takes >= 40 ms; without it a few ms even on a busy machine
    assert statistics.median(times) < 0.035, times

"""A monotonic clock for code that takes `clock` and `sleep`: time moves only when the code under test sleeps, so
deadlines, backoffs and idle intervals pass at once."""

from __future__ import annotations


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

"""Free ports chosen for the processes the suite starts: distinct, and never one it was told to
avoid (a remote run's master port: free while the side's ports are chosen, bound right after)."""

from __future__ import annotations

from harness.processes import ports


class _Sockets:
    """Stands in for ``socket.socket``: each bind to port 0 gets the next port of a sequence, as
    the kernel would hand them out (the real order is the kernel's and cannot be arranged)."""

    def __init__(self, sequence: list[int]) -> None:
        self.next = iter(sequence)

    def __call__(self) -> _Socket:
        return _Socket(self.next)


class _Socket:
    def __init__(self, sequence) -> None:
        self.sequence, self.port = sequence, None

    def bind(self, address) -> None:
        self.port = next(self.sequence)

    def getsockname(self):
        return ("127.0.0.1", self.port)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def test_an_avoided_port_is_passed_over(monkeypatch):
    monkeypatch.setattr(ports.socket, "socket", _Sockets([47599, 47600, 47599, 47601]))
    assert ports.free_ports(2, avoid=frozenset([47599])) == [47600, 47601]


def test_real_ports_are_distinct_and_bindable():
    chosen = ports.free_ports(8)
    assert len(set(chosen)) == 8 and all(ports.bindable(p) for p in chosen)


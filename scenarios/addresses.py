"""The source address each simulated client sends from, live: its own, on loopback.

Linux routes all of 127.0.0.0/8 to the loopback interface, so a socket bound to 127.x.y.z before
it connects reaches a target on 127.0.0.1 from that address. A limiter keyed by client address
(a library's default) then sees the clients the scenario means, not one client: the load
generator. A model whose clients share an address on purpose (behind one proxy or NAT) says so
(``TrafficModel.shared_address``) and all of its requests leave from that one.

The suite's own requests (the warm-up, the refusal probe after the load) leave from addresses of
their own, never a tested client's, so they spend no tested quota.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

MAX_ADDRESSES = 1000
"""Distinct client addresses per run: past it, client n sends from the address of client
n mod 1,000 (each address holds warm connections on every worker, and a target process caps its
connections at 4,096). The client log says which address each request came from."""
CLIENT_NET = (127, 10)
"""Client n sends from 127.10.(n // 250).(n % 250 + 1): clear of 127.0.0.x, the suite's own."""
PER_OCTET = 250 * 250
ADDRESS_BLOCKS = (255 - CLIENT_NET[1]) * PER_OCTET // MAX_ADDRESSES
"""Blocks of MAX_ADDRESSES addresses, from 127.10.0.1 up through 127.254.x.y: a run against a side
that outlives it (a url endpoint keyed by address) takes a block no earlier run of the campaign
used, so its clients meet no quota a previous run's clients spent (15,312 runs before one repeats)."""
WARM_UP_ADDRESS = "127.0.0.2"
"""The warm-up's requests (is the side up?) come from here."""
PROBE_ADDRESS = "127.0.0.3"
"""The refusal probe after a run's load (it drives its own key into the limit) comes from here."""
SHARED = "127.0.0.1"
"""The one proxy or NAT address of a model whose clients share it on purpose."""


def on_loopback(url: str) -> bool:
    """Whether ``url``'s host is on 127.0.0.0/8, the only hosts a loopback source address reaches
    (elsewhere every request leaves from the machine's own address)."""
    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.")


def client_address(n: int, block: int = 0) -> str:
    """The n-th distinct client's own address, in address block ``block``."""
    index = (block % ADDRESS_BLOCKS) * MAX_ADDRESSES + n % MAX_ADDRESSES
    return f"{CLIENT_NET[0]}.{CLIENT_NET[1] + index // PER_OCTET}.{index % PER_OCTET // 250}.{index % 250 + 1}"


def addresses(client_ids: Sequence[str], shared: str | None, block: int = 0) -> list[str]:
    """Each request's source address, by its client (an id, or a key where a model's ids split
    one client): in order of each client's first request, from address block ``block``, or
    ``shared`` for all of them."""
    if shared is not None:
        return [shared] * len(client_ids)
    own: dict[str, str] = {}
    out = []
    for client in client_ids:
        address = own.get(client)
        if address is None:
            address = own[client] = client_address(len(own), block)
        out.append(address)
    return out

"""How an endpoint tells clients apart, found from outside: ``judge`` without ``--key``; and a key
the judgement's own answers show it does not tell clients apart by.

One identity (a source address of its own and a value for every candidate header, on one
connection kept alive) is sent to until it is refused. Then, one at a time, the same identity with
one thing changed: a fresh connection (all else the same), a fresh source address, or a fresh
value of one header. A limiter keyed by that thing admits the
changed identity at once (a fresh key has its whole quota); one keyed by anything else refuses
it as it refuses the identity. The identity is asked again after each change: admitted again, its
quota came back meanwhile (a window ended, a token refilled) and the round proves nothing, so it
is refused again and the round made anew. A key is found when every round admitted its change
(a token refilled just before a change could admit one round by chance, not two); a later round
changes only what every earlier one admitted (what one refused cannot be the key). No change
admitted: one counter for everyone, or a key made of something the judge does not vary. A fresh
connection admitted means a counter per connection (Envoy's
``local_rate_limit_per_downstream_connection``): a client that reconnects, or opens several, has a
quota on each, and no limit holds a client as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from .endpoint import CapReached, HttpEndpoint, JudgeError, KeySpec, Sent

HEADERS = ("Authorization", "X-API-Key", "apikey", "X-Client-Id", "Cookie")
"""The headers APIs key clients by, as gateways' docs name them (Kong's ``apikey``, the common
``X-API-Key``, a bearer token, a client id, a session cookie)."""
FORMS = {"Authorization": "Bearer {}", "Cookie": "session={}"}
"""How a value is written where the header has a form of its own (others: the bare value)."""
IP = "ip"
CONNECTION = "connection"
"""The change that only opens a new connection: first, since a fresh address is a new connection too."""
ROUNDS, TRIES = 2, 4
"""Rounds every change must be admitted in; rounds made at most (a round spoiled by the
identity's quota coming back is made again)."""
BURST_CAP = 300
"""Requests to the first identity before it must have been refused: past it, nothing is found."""


@dataclass(frozen=True)
class Found:
    """What the discovery found: the candidates whose change was admitted in every round."""

    keys: tuple[str, ...]
    tried: tuple[str, ...]
    admitted: int
    """Admitted to the first identity before its first refusal (never refused: the requests it was sent)."""
    refused: bool
    rounds: int
    """Rounds that proved something (``ROUNDS`` when the answer is sure; 0: none did, nothing found)."""

    @property
    def settled(self) -> bool:
        """Whether a round proved something: a client refused, and refused again after a change."""
        return self.refused and self.rounds > 0

    @property
    def per_connection(self) -> bool:
        """Whether a fresh connection, all else the same, was a new client."""
        return CONNECTION in self.keys

    def spec(self, prefix: str = "judge-") -> KeySpec | None:
        """The key to judge by: the address when a fresh one is a new client (or a fresh
        connection is: each address keeps one), else the first header; None when no change was
        admitted."""
        if IP in self.keys or self.per_connection:
            return KeySpec()
        if not self.keys:
            return None
        name = self.keys[0]
        return KeySpec(name, FORMS.get(name, "{}").format(prefix))

    def sentence(self) -> str:
        if not self.refused:
            return (f"the key was not found: one client was never refused in {self.admitted} requests "
                    f"(tried: {', '.join(self.tried)})")
        if not self.rounds:
            return (f"the key was not found: a client refused after {self.admitted} admitted was admitted again "
                    f"between two changes in each of {TRIES} tries (its quota comes back faster than a change is sent)")
        sure = f"{self.rounds} of {ROUNDS} rounds" if self.rounds < ROUNDS else f"in each of {ROUNDS} rounds"
        head = f"a client refused after {self.admitted} admitted; "
        if self.per_connection:
            return head + (f"a fresh connection, from the same address with the same headers, was admitted at once "
                           f"({sure}): a counter per connection: a client that reconnects, or opens several (a browser "
                           "opens up to 6), gets a quota on each, so nothing limits a client as such")
        if not self.keys:
            named = [{IP: "source address", CONNECTION: "connection"}.get(c, c) for c in self.tried]
            changes = ", ".join(named[:-1]) + f" or {named[-1]}" if len(named) > 1 else named[0]
            return (head + f"a fresh {changes} value was refused as well ({sure}): one counter for everyone, or a key "
                    "made of something the judge does not vary (a path, a query, another header)")
        what = ", ".join("its source address" if k == IP else f"the {k} header" for k in self.keys)
        return head + f"a fresh value of {what} was admitted at once ({sure}): keyed by {what}"


def discover(endpoint: HttpEndpoint) -> Found:
    """Which of the source address (on loopback, where fresh ones can be sent from) and the usual
    headers tells clients apart (module doc); the requests go to ``endpoint.before``, the
    judgement's log starts empty. A request cap reached before the first refusal finds nothing
    (the judgement then says no limit was found within it)."""
    tried = (CONNECTION, *((IP,) if endpoint.loopback else ()), *HEADERS)
    try:
        return _rounds(endpoint, tried)
    except CapReached:
        if all(s.answer.allowed for s in endpoint.log):
            return Found((), tried, len(endpoint.log), False, 0)
        raise
    finally:
        endpoint.set_aside()


def _rounds(endpoint: HttpEndpoint, tried: tuple[str, ...]) -> Found:
    admitted = _until_refused(endpoint, tried)
    if admitted is None:
        return Found((), tried, BURST_CAP, False, 0)
    kept: set[str] = set(tried)
    rounds = 0
    for n in range(TRIES):
        if rounds == ROUNDS:
            break
        if n and _until_refused(endpoint, tried) is None:
            break
        passed = _round(endpoint, tried, tuple(c for c in tried if c in kept) or tried, n + 1)
        if passed is not None:
            kept &= passed
            rounds += 1
    return Found(tuple(c for c in tried if c in kept) if rounds else (), tried, admitted, True, rounds)


def _round(endpoint: HttpEndpoint, tried: tuple[str, ...], changes: tuple[str, ...], n: int) -> set[str] | None:
    """The ``changes`` (of the identity's ``tried``) the refused identity's limiter admitted; None
    when the identity itself was admitted again between two changes (the round proves nothing)."""
    passed = set()
    for c in changes:
        if _send(endpoint, tried, changed=c, n=n):
            passed.add(c)
        if _send(endpoint, tried):
            return None
    return passed


def _until_refused(endpoint: HttpEndpoint, tried: tuple[str, ...]) -> int | None:
    """Admitted to the identity before it was refused; None when it was not within the cap."""
    for admitted in range(BURST_CAP):
        if not _send(endpoint, tried):
            return admitted
    return None


def _send(endpoint: HttpEndpoint, tried: tuple[str, ...], changed: str | None = None, n: int = 0) -> bool:
    """One request as the identity (number 0), or as it with ``changed`` fresh (number ``n``)."""
    def value(name: str) -> str:
        fresh = n if name == changed else 0
        return FORMS.get(name, "{}").format(f"judge-{endpoint.run}-id{fresh}")
    headers = {h: value(h) for h in tried if h not in (IP, CONNECTION)}
    address = endpoint.identity_address(n if changed == IP else 0)
    name = "identity" if changed is None else f"identity, {changed} fresh ({n})"
    return endpoint.send_as(address, headers, name, "key", new_connection=changed == CONNECTION).allowed


def shared(log: list[Sent], said: str) -> JudgeError | None:
    """The judgement's fresh keys refused at their first request, as an error naming the key
    (``said``: how it was chosen): a fresh client has its whole quota, so the limiter counted
    them as one client, and nothing found is about a client; None when every first was admitted."""
    first: dict[str, Sent] = {}
    for s in log:
        first.setdefault(s.answer.key, s)
    refused = [s for s in first.values() if not s.answer.allowed]
    if not refused:
        return None
    return JudgeError(f"{len(refused)} of {len(first)} fresh keys were refused at their first request ({refused[0].answer.key}, "
                      f"{refused[0].role}): the limiter does not tell clients apart by {said}, or a limit every client "
                      "shares was spent; leave --key out for the judge to find the key")

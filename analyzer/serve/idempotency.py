"""Requests that a client may send again without doing twice what they ask: `POST /api/runs`
with an `Idempotency-Key` header (the IETF draft's "Idempotency-Key" field).

A client that gave up waiting (its own timeout) and sends a run's request again, with the same
key, gets the first request's answer, never a second run: while the first is still being
answered, the second waits for its answer (within its own wait budget; then 409, to be asked
again); once answered, the answer is replayed (`Idempotency-Replayed: true`). The same key with
other settings is refused (422). A refusal keeps nothing: the request may be sent again, and is
answered anew. Keys are kept by this server, in memory, for `KEPT` seconds (at most `MOST` of
them): a retry after the server restarted is not recognised.

    answer = await replays.answer(key, fingerprint, budget, make)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

from analyzer.errors import Conflict, Invalid
from analyzer.store import WaitBudget

HEADER = "Idempotency-Key"
REPLAYED = "Idempotency-Replayed"
KEPT = 24 * 3600.0
"""Seconds an answer is kept for its key."""
MOST = 10_000
"""Keys kept at once; one more forgets the oldest answered."""
MAX_KEY = 255


class StillAnswering(Conflict):
    """The first request of this key is still being answered: ask again in a moment."""


def checked_key(key: str) -> str:
    """The key as sent, if it is one (1 to 255 visible ASCII characters); Invalid otherwise.

    >>> checked_key("4f1c-77a0")
    '4f1c-77a0'
    """
    if not 0 < len(key) <= MAX_KEY or not all(33 <= ord(c) <= 126 for c in key):
        raise Invalid(f"the {HEADER} header must be 1 to {MAX_KEY} visible ASCII characters (a "
                      "UUID, say); this one is not", value=key[:100])
    return key


def fingerprint(settings: dict) -> str:
    """What a request asked, as its key is checked against: its settings, in a canonical form.

    >>> fingerprint({"b": 1, "a": [2]}) == fingerprint({"a": [2], "b": 1})
    True
    """
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Entry:
    fingerprint: str
    answered: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    """The first request's answer (its JSON body), or its failure (the entry is then gone)."""
    kept_until: float = 0.0


class Replays:
    """The answers of keyed requests, on the event loop (one thread: no lock)."""

    def __init__(self, kept: float = KEPT, most: int = MOST,
                 clock: Callable[[], float] = time.monotonic):
        self.kept, self.most, self.clock = kept, most, clock
        self.entries: OrderedDict[str, Entry] = OrderedDict()

    async def answer(self, key: str, asked: str, budget: WaitBudget | None,
                     make: Callable[[], Awaitable[dict]]) -> tuple[dict, bool]:
        """(the answer, whether it is replayed) for a request of `key` asking `asked` (its
        fingerprint): made by `make` the first time, the first's answer after that."""
        while True:
            self._forget_old()
            entry = self.entries.get(key)
            if entry is None:
                break
            if entry.fingerprint != asked:
                raise Invalid(f"this {HEADER} ({key[:100]}) came before with other settings; a "
                              "new request needs a new key. Nothing was started", value=key[:100])
            if not entry.answered.done():
                try:
                    with budget.waiting() if budget is not None else nullcontext(None) as left:
                        await asyncio.wait_for(asyncio.shield(entry.answered), left)
                except TimeoutError:
                    raise StillAnswering(f"a request with this {HEADER} is still being answered; "
                                         "ask again in a moment (nothing more was started)") \
                        from None
                except Exception:  # noqa: S112 - the first failed: this one is answered anew
                    continue
            return entry.answered.result(), True
        entry = self.entries[key] = Entry(asked)
        try:
            answer = await make()
        except BaseException as error:
            del self.entries[key]  # refused or failed: nothing done, nothing kept
            entry.answered.set_exception(error if isinstance(error, Exception) else
                                         RuntimeError("the first request was cancelled"))
            entry.answered.exception()  # retrieved: no "never retrieved" warning
            raise
        entry.kept_until = self.clock() + self.kept
        entry.answered.set_result(answer)
        return answer, False

    def _forget_old(self) -> None:
        now = self.clock()
        for key in [key for key, entry in self.entries.items()
                    if entry.answered.done() and entry.kept_until <= now]:
            del self.entries[key]
        while len(self.entries) > self.most:
            oldest = next((key for key, entry in self.entries.items() if entry.answered.done()),
                          None)
            if oldest is None:
                break
            del self.entries[oldest]

"""The service's limits: one definition for the server (`analyzer.serve`) and for `analyzer
serve`'s options, which read them without importing the serve extra (FastAPI, uvicorn).

Each is what a server takes at once or waits for before it refuses, with a status and a
message naming the option that sets it (docs/how-to/serve.md, "Limits").
"""

from __future__ import annotations

import os

from analyzer.corpus.archives import DEFAULT_UNPACK_LIMIT

DEFAULT_BODY_LIMIT = 1_000_000
"""Bytes a request body may have (tokenize and compare texts included): `--max-body`."""

DEFAULT_CORPUS_LIMIT = DEFAULT_UNPACK_LIMIT
"""Bytes an uploaded corpus may have, as sent and (a zip) unpacked: `ingest`'s limit too,
`--max-corpus-bytes`."""

MAX_UPLOADS = 2
"""Uploads read at once (each holds a thread and its file's bytes on disk); one more gets 503."""

DEFAULT_UPLOAD_SPACE = 600_000_000
"""Bytes of temporary disk the uploads being read may take in total (`Uploads.needs`): two of
the largest at the default limit, `--max-upload-space`."""

DEFAULT_MAX_QUEUE = 20
"""Runs that may wait behind the one in progress: `--max-queue`."""

DEFAULT_MAX_CONNECTIONS = 1_000
"""Connections the server holds open at once (each is a file descriptor): `--max-connections`."""

DEFAULT_COUNTING_PROCESSES = max(2, os.cpu_count() or 1)
"""How many requests count at once, each in a process of its own (the others get 503):
`--count-processes`."""

DEFAULT_LOCK_WAIT = 5.0
"""Seconds a request's write waits for another process's write lock before it is answered 503
(the command line waits a minute: a person is watching it, a client has its own timeout):
`--lock-wait`."""

REQUEST_TIMEOUT = 10.0
"""Seconds a connection may take to send a request's headers (or wait idle for its next one),
and the window over which its body's rate is measured: `--request-timeout`."""

MIN_BODY_RATE = 32_000
"""Bytes a second a request's body must average over each window (a 100 MB upload then has
about 52 minutes; a trickle that would hold a connection and an upload's slot is cut):
`--min-body-rate`."""

SESSION_LIFETIME = 12 * 3600.0
"""Seconds a browser's session lasts after it signs in with the token (then it signs in again):
a working day, so that a cookie another port's server received is not good for long."""

MAX_SESSIONS = 1_000
"""Sessions a server keeps at once; one more ends the oldest."""

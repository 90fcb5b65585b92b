"""JSON bodies read as the command line reads JSON: a key given twice in one object is refused
(422, naming it), where the JSON reader behind the routes keeps the last without a word; and a
body that reader cannot take for what is not a syntax error (a number of more than 4,300 digits,
nesting too deep), which it answered "There was an error parsing the body", is said as such."""

from __future__ import annotations

from python_multipart.multipart import parse_options_header

from analyzer.corpus.files import Malformed, NotJSON, parse_json, unique_keys

from .problems import problem


def is_json(scope) -> bool:
    """Whether the routes read the request's body as JSON: its Content-Type is application/json
    or application/...+json (FastAPI reads no other as JSON).

    >>> is_json({"headers": [(b"content-type", b"application/merge-patch+json; charset=utf-8")]})
    True
    """
    kind, _ = parse_options_header(dict(scope["headers"]).get(b"content-type"))
    return kind == b"application/json" or (kind.startswith(b"application/")
                                           and kind.endswith(b"+json"))


class StrictJSON:
    """ASGI middleware: a JSON body that gives a key twice in an object, or that JSON's reader
    cannot take (too many digits, too deep), is a 422 saying which; any other is passed on as it
    came (a syntax error is the routes' to say, where it is). Bodies are bounded before this
    (`guards.BodyLimit`)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not is_json(scope):
            return await self.app(scope, receive, send)
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        if body:
            try:
                parse_json(body, object_pairs_hook=unique_keys)
            except Malformed:
                pass
            except NotJSON as error:
                response = problem(422, "Unprocessable input", f"the request's JSON body: {error}; "
                                   "nothing was done")
                return await response(scope, receive, send)

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

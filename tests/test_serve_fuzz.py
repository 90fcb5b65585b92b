"""The API fuzzed from its own OpenAPI schema (schemathesis): no generated request, valid or
not, gets a server error. (503 with Retry-After is not one: a full queue of runs says so.)

The schema is the application's own (`app.openapi()`), read at collection; the requests go to
a real server over HTTP. (schemathesis's lazy `from_fixture` loader reaches into pytest's
private node attributes, which pytest 9.2 removed: this way uses public APIs only.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from helpers import Server, make_served_db

schemathesis = pytest.importorskip("schemathesis", reason="pip install -e '.[test]'")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")


def _application_schema() -> dict:
    from analyzer.serve import create_app

    with tempfile.TemporaryDirectory() as folder:
        return create_app(Path(folder) / "schema.db").openapi()


schema = schemathesis.openapi.from_dict(_application_schema())


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    # A short queue: the runs the fuzzer starts wait behind one another, then are refused.
    server = Server(make_served_db(tmp_path_factory.mktemp("fuzz")), "--max-queue", "2")
    yield server.url
    server.stop()


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case, server_url):
    response = case.call(base_url=server_url, timeout=120)
    busy = response.status_code == 503 and "retry-after" in response.headers
    assert response.status_code < 500 or busy, (case.method, case.path, case.body, response.text)
    if response.status_code >= 400:
        content_type = response.headers["content-type"]
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith("application/problem+json"), (case.path, content_type)

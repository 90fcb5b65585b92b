"""The API fuzzed from its own OpenAPI schema (schemathesis): no generated request, valid or
not, gets a server error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from helpers import Server

schemathesis = pytest.importorskip("schemathesis", reason="pip install -e '.[test]'")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")


@pytest.fixture(scope="module")
def served_schema(tmp_path_factory):
    from test_serve import make_db

    db = make_db(tmp_path_factory.mktemp("fuzz"))
    server = Server(db)
    yield schemathesis.openapi.from_url(server.url + "/openapi.json")
    server.stop()


schema = schemathesis.pytest.from_fixture("served_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case):
    response = case.call(timeout=120)
    assert response.status_code < 500, (case.method, case.path, case.body, response.text)
    if response.status_code >= 400:
        content_type = response.headers["content-type"]
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith("application/problem+json"), (case.path, content_type)

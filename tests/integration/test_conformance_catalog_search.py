"""Stream Catalog basic search (`GET /catalog/v1/search/basic`), from Confluent's Catalog API (v1): an Atlas
search result whose `entities[]` carry `typeName`, `guid`, `status` and `attributes` (`name`,
`qualifiedName` as `<registry>:<cluster>:<topic>`), filtered by `types` and a full-text `query`, paged by
`limit` and `offset`; errors in the registry's `{error_code, message}` shape."""

from __future__ import annotations

import pytest

from shift_left_dagster.project.config import LOCAL_CLUSTER_ID
from tests.integration.conformance import Api, kafka_error

pytestmark = pytest.mark.service

SEARCH = "/catalog/v1/search/basic"


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    api = Api(local_service.url)
    for sql in ("CREATE TABLE csrch_orders_raw (id INT)", "CREATE TABLE csrch_Orders_clean (id INT)",
                "CREATE TABLE csrch_customers (id INT)"):
        api.run(sql)
    return api


def names(response) -> list[str]:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.text
    return sorted(e["attributes"]["name"] for e in response.json()["entities"])


def test_topic_search_by_name(api: Api) -> None:
    found = api.call("GET", SEARCH, params={"types": "kafka_topic", "query": "CSRCH_orders"})
    assert names(found) == ["csrch_Orders_clean", "csrch_orders_raw"]  # full text: any case
    entity = next(e for e in found.json()["entities"] if e["attributes"]["name"] == "csrch_orders_raw")
    assert entity["typeName"] == "kafka_topic" and entity["status"] == "ACTIVE" and entity["guid"]
    registry, cluster, topic = entity["attributes"]["qualifiedName"].split(":")
    assert registry.startswith("lsrc-") and cluster == LOCAL_CLUSTER_ID and topic == "csrch_orders_raw"
    assert found.json()["searchParameters"]["query"] == "CSRCH_orders"
    assert "csrch_customers" in names(api.call("GET", SEARCH, params={"types": "kafka_topic"}))
    assert names(api.call("GET", SEARCH, params={"types": "kafka_topic", "query": "no-such-topic"})) == []


def test_paging_subject_search_and_errors(api: Api) -> None:
    first = names(api.call("GET", SEARCH, params={"types": "kafka_topic", "query": "csrch_", "limit": 2}))
    rest = names(api.call("GET", SEARCH, params={"types": "kafka_topic", "query": "csrch_", "limit": 2, "offset": 2}))
    assert len(first) == 2 and len(rest) == 1 and sorted(first + rest) == \
        ["csrch_Orders_clean", "csrch_customers", "csrch_orders_raw"]
    subjects = api.call("GET", SEARCH, params={"types": "sr_subject", "query": "csrch_customers"})
    assert names(subjects) == ["csrch_customers-value"]
    kafka_error(api.call("GET", SEARCH, params={"types": "no_such_type"}), 400, 400)
    kafka_error(api.call("GET", SEARCH, params={"types": "kafka_topic", "limit": "x"}), 400, 400)
    kafka_error(api.call("GET", "/catalog/v1/no/such/path"), 404, 404)

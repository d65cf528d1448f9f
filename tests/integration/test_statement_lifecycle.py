"""Stop, resume, carry offsets, delete: over real HTTP with the Confluent client."""

from __future__ import annotations

import pytest

from shift_left_dagster.confluent.errors import NotFound
from tests.integration.support import client_for, quiesce, run, select, unique

pytestmark = pytest.mark.service


def insert(client, ids: range) -> None:  # type: ignore[no-untyped-def]
    values = ", ".join(f"({i}, 'v{i}')" for i in ids)
    run(client, unique("sr-insert"), f"INSERT INTO sr_events VALUES {values}")


def copied(ids: range) -> list[tuple]:
    """What the stateless statement writes: ids above 2, value upper-cased."""
    return sorted(((str(i), f"V{i}") for i in ids if i > 2), key=repr)


def test_stop_insert_resume_loses_and_duplicates_nothing(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("sr-ddl"), "CREATE TABLE sr_events (id INT, v STRING) DISTRIBUTED BY HASH(id) INTO 3 BUCKETS")
    run(client, unique("sr-ddl"), "CREATE TABLE sr_copy (id INT, v STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("sr-ddl"), "CREATE TABLE sr_tail (id INT, v STRING) DISTRIBUTED INTO 1 BUCKETS")
    insert(client, range(1, 11))
    copy = unique("sr-copy")
    started = run(client, copy, "INSERT INTO sr_copy SELECT id, UPPER(v) FROM sr_events WHERE id > 2", "RUNNING")
    assert started.status.traits.sql_kind == "INSERT_INTO"
    quiesce(local_service.url)

    stopped = client.stop_statement(copy)
    assert stopped.phase == "STOPPED" and stopped.status.latest_offsets_timestamp is not None
    offsets = stopped.latest_offsets["sr_events"]
    assert sorted(offsets) == [0, 1, 2] and sum(offsets.values()) == 10  # next offsets: 10 records read

    insert(client, range(11, 21))
    quiesce(local_service.url)
    assert select(client, "SELECT * FROM sr_copy") == copied(range(1, 11))  # stopped: nothing new read

    resumed = client.resume_statement(copy)
    assert resumed.phase == "RUNNING" and not resumed.status.latest_offsets
    quiesce(local_service.url)
    assert select(client, "SELECT * FROM sr_copy") == copied(range(1, 21))

    # latest_offsets are the next offsets to read: a new statement started there sees only later records.
    carried = client.stop_statement(copy).status.latest_offsets["sr_events"]
    insert(client, range(21, 26))
    tail = unique("sr-tail")
    run(client, tail, "INSERT INTO sr_tail SELECT id, UPPER(v) FROM sr_events /*+ OPTIONS("
                      "'scan.startup.mode'='specific-offsets', "
                      f"'scan.startup.specific-offsets'='{carried}') */ WHERE id > 2", "RUNNING")
    quiesce(local_service.url)
    assert select(client, "SELECT * FROM sr_tail") == copied(range(21, 26))

    for name in (copy, tail):
        client.delete_statement(name)
        with pytest.raises(NotFound):
            client.get_statement(name)


def test_bounded_statement_completes_at_its_bound(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("bd-ddl"), "CREATE TABLE bd_in (id INT) DISTRIBUTED INTO 2 BUCKETS")
    run(client, unique("bd-ddl"), "CREATE TABLE bd_out (id INT, n BIGINT, PRIMARY KEY (id) NOT ENFORCED) "
                                  "DISTRIBUTED BY HASH(id) INTO 1 BUCKETS")
    run(client, unique("bd-insert"), "INSERT INTO bd_in VALUES (1), (1), (2)")
    bounded = run(client, unique("bd-count"), "INSERT INTO bd_out SELECT id, COUNT(*) FROM bd_in "
                                              "/*+ OPTIONS('scan.bounded.mode'='latest-offset') */ GROUP BY id",
                  "COMPLETED", "RUNNING")
    quiesce(local_service.url)
    assert client.get_statement(bounded.name).phase == "COMPLETED"
    assert select(client, "SELECT * FROM bd_out") == [("1", "2"), ("2", "1")]

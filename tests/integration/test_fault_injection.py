"""Faults between the client and the real local service: every operation ends correct or fails clearly.

A fault-injecting proxy (fault_proxy.py) sits between a ConfluentClient with a
short read timeout and the in-process service. The service's own statement
list (read directly, not through the proxy) is the judge: a create that
returned made exactly one statement, a create that failed made at most one,
a delete that returned left none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from shift_left_dagster.confluent.client import ClientSettings, ConfluentClient, PollPolicy, RetryPolicy
from shift_left_dagster.confluent.errors import ConfluentError, ConnectionFailed, RateLimited, ServerError
from shift_left_dagster.confluent.models import Phase
from shift_left_dagster.project.config import local_defaults
from tests.integration.fault_proxy import Fault, FaultProxy
from tests.integration.support import client_for, run, unique

pytestmark = pytest.mark.service

READ_TIMEOUT = 1.0
SLOW = 1.6  # beyond the client's read timeout
ATTEMPTS = 6
STATEMENTS = r"/statements$"
DDL = "CREATE TABLE fp_never_run (id INT) DISTRIBUTED INTO 1 BUCKETS"  # created stopped: never run


def one(name: str) -> str:
    """The path pattern of one statement (not its /results or /exceptions)."""
    return rf"/statements/{name}$"


@pytest.fixture(scope="module")
def proxy(local_service) -> Iterator[FaultProxy]:  # type: ignore[no-untyped-def]
    with FaultProxy(local_service.url) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(proxy: FaultProxy) -> Iterator[None]:
    proxy.clear()
    yield
    proxy.wait_idle()
    proxy.clear()


@pytest.fixture
def faulty(proxy: FaultProxy) -> Iterator[ConfluentClient]:
    """A client through the proxy: short read timeout, quick backoff, Retry-After honoured."""
    settings = ClientSettings.from_config(local_defaults(proxy.url)).model_copy(update={
        "connect_timeout": 2.0, "read_timeout": READ_TIMEOUT,
        "retry": RetryPolicy(max_attempts=ATTEMPTS, backoff_base=0.05, backoff_cap=0.2),
        "poll": PollPolicy(initial=0.1, step=0.1, cap=0.5),
    })
    with ConfluentClient(settings) as client:
        yield client


@pytest.fixture
def direct(local_service) -> ConfluentClient:  # type: ignore[no-untyped-def]
    return client_for(local_service.url)


def copies(direct: ConfluentClient, name: str) -> int:
    return sum(1 for statement in direct.list_statements() if statement.name == name)


# --- create ----------------------------------------------------------------------------------------

CREATE_FAULTS = [
    Fault("POST", STATEMENTS, "status", status=429, retry_after=1),
    Fault("POST", STATEMENTS, "status", status=502),
    Fault("POST", STATEMENTS, "status", status=503, landed=True),
    Fault("POST", STATEMENTS, "status", status=504, landed=True),
    Fault("POST", STATEMENTS, "drop"),
    Fault("POST", STATEMENTS, "drop", landed=True),
    Fault("POST", STATEMENTS, "slow", delay=SLOW, landed=True),
    Fault("POST", STATEMENTS, "slow", delay=SLOW),  # the held request arrives after the retry created it
]


@pytest.mark.parametrize("fault", CREATE_FAULTS, ids=lambda f: f"{f.kind}{f.status if f.kind == 'status' else ''}"
                                                           f"{'-landed' if f.landed else ''}")
def test_create_through_a_fault_makes_exactly_one_statement(proxy: FaultProxy, faulty: ConfluentClient,
                                                            direct: ConfluentClient, fault: Fault) -> None:
    name = unique("fp-create")
    proxy.arm(dataclasses.replace(fault))  # a fresh copy: faults count their firings
    created = faulty.create_statement(name, DDL, stopped=True)
    proxy.wait_idle()
    assert created.name == name and created.spec.statement == DDL
    assert copies(direct, name) == 1
    assert len(proxy.fired()) == 1 and not proxy.unfired()


def test_create_failing_before_landing_fails_clearly_and_creates_nothing(
    proxy: FaultProxy, faulty: ConfluentClient, direct: ConfluentClient
) -> None:
    name = unique("fp-refused")
    proxy.arm(Fault("POST", STATEMENTS, "status", status=503, times=ATTEMPTS))
    with pytest.raises(ServerError, match=r"POST /sql/v1/.*/statements failed with HTTP 503"):
        faulty.create_statement(name, DDL, stopped=True)
    proxy.arm(Fault("POST", STATEMENTS, "status", status=429, retry_after=0, times=ATTEMPTS))
    with pytest.raises(RateLimited):
        faulty.create_statement(name, DDL, stopped=True)
    assert copies(direct, name) == 0


def test_create_whose_answers_are_all_lost_fails_clearly_and_leaves_one(
    proxy: FaultProxy, faulty: ConfluentClient, direct: ConfluentClient
) -> None:
    name = unique("fp-lost-answers")
    proxy.arm(Fault("POST", STATEMENTS, "drop", landed=True, times=ATTEMPTS))
    with pytest.raises(ConnectionFailed, match=f"could not reach the service after {ATTEMPTS} attempt"):
        faulty.create_statement(name, DDL, stopped=True)
    proxy.wait_idle()
    assert copies(direct, name) == 1  # the first attempt landed; every retry met its 409
    assert direct.get_statement(name).spec.statement == DDL


# --- get / wait ------------------------------------------------------------------------------------


def test_wait_through_every_kind_of_fault_reaches_the_phase(proxy: FaultProxy, faulty: ConfluentClient,
                                                            direct: ConfluentClient) -> None:
    name = unique("fp-wait")
    proxy.arm(
        Fault("GET", one(name), "status", status=429, retry_after=1),
        Fault("GET", one(name), "status", status=503),
        Fault("GET", one(name), "drop"),
        Fault("GET", one(name), "slow", delay=SLOW, landed=True),
        Fault("GET", one(name), "status", status=502),  # five faults: one call absorbs ATTEMPTS - 1
        Fault("POST", STATEMENTS, "status", status=504, landed=True),
    )
    faulty.create_statement(name, f"CREATE TABLE fp_wait_{name.rsplit('-', 1)[1]} (id INT) DISTRIBUTED INTO 1 BUCKETS")
    done = faulty.wait_for_phase(name, {Phase.COMPLETED}, timeout=120)
    assert done.phase == Phase.COMPLETED and not proxy.unfired()
    assert copies(direct, name) == 1


def test_a_service_that_never_answers_in_time_fails_the_wait_clearly(proxy: FaultProxy, faulty: ConfluentClient,
                                                                    direct: ConfluentClient) -> None:
    name = unique("fp-silent")
    direct.create_statement(name, DDL, stopped=True)
    proxy.arm(Fault("GET", one(name), "slow", delay=SLOW, landed=True, times=ATTEMPTS))
    with pytest.raises(ConnectionFailed, match=f"GET /sql/v1/.*/{name}: .*{ATTEMPTS} attempt.*ReadTimeout"):
        faulty.wait_for_phase(name, {Phase.RUNNING}, timeout=60)


# --- stop and resume ------------------------------------------------------------------------------


def test_stop_and_resume_through_lost_answers_apply_once(proxy: FaultProxy, faulty: ConfluentClient,
                                                         direct: ConfluentClient) -> None:
    suffix = unique("t").rsplit("-", 1)[1]
    run(direct, unique("fp-ddl"), f"CREATE TABLE fp_src_{suffix} (id INT) DISTRIBUTED INTO 1 BUCKETS")
    run(direct, unique("fp-ddl"), f"CREATE TABLE fp_dst_{suffix} (id INT) DISTRIBUTED INTO 1 BUCKETS")
    name = unique("fp-stream")
    run(direct, name, f"INSERT INTO fp_dst_{suffix} SELECT id FROM fp_src_{suffix}", Phase.RUNNING)

    proxy.arm(
        Fault("PUT", one(name), "drop", landed=True),  # stopped, answer lost: the retry's 409 is re-read
        Fault("PUT", one(name), "status", status=503, landed=True),
        Fault("GET", one(name), "slow", delay=SLOW, landed=True, times=2),
    )
    stopped = faulty.stop_statement(name, timeout=120)
    assert stopped.phase == Phase.STOPPED and stopped.spec.stopped
    fired = proxy.fired()
    assert "PUT drop after landing" in fired and "GET slow after landing" in fired, fired

    proxy.clear()
    proxy.arm(
        Fault("PUT", one(name), "status", status=504, landed=True),
        Fault("PUT", one(name), "slow", delay=SLOW, landed=True),
        Fault("GET", one(name), "drop"),
    )
    resumed = faulty.resume_statement(name, timeout=120)
    assert resumed.phase == Phase.RUNNING and not resumed.spec.stopped
    assert "PUT status504 after landing" in proxy.fired()
    assert copies(direct, name) == 1
    direct.delete_statement(name)


# --- delete ------------------------------------------------------------------------------------


@pytest.mark.parametrize("faults", [
    [Fault("DELETE", "", "drop", landed=True)],
    [Fault("DELETE", "", "status", status=503, landed=True), Fault("DELETE", "", "slow", delay=SLOW, landed=True)],
    [Fault("DELETE", "", "status", status=429, retry_after=1), Fault("DELETE", "", "slow", delay=SLOW)],
    [Fault("DELETE", "", "status", status=502), Fault("GET", "", "drop"), Fault("GET", "", "status", status=504)],
], ids=["drop-landed", "503-landed-then-slow", "429-then-held", "502-then-get-faults"])
def test_delete_through_faults_leaves_no_statement(proxy: FaultProxy, faulty: ConfluentClient,
                                                   direct: ConfluentClient, faults: list[Fault]) -> None:
    name = unique("fp-delete")
    direct.create_statement(name, DDL, stopped=True)
    proxy.arm(*(dataclasses.replace(fault, path=one(name)) for fault in faults))
    faulty.delete_statement(name, timeout=60)
    proxy.wait_idle()
    assert copies(direct, name) == 0 and not proxy.unfired()


# --- everything at once -----------------------------------------------------------------------------


def test_random_faults_on_a_stream_of_operations_never_duplicate_or_lose(
    proxy: FaultProxy, faulty: ConfluentClient, direct: ConfluentClient
) -> None:
    """Seeded chaos on every request: each operation's outcome agrees with the service's list.

    A create held in the network past the client's timeout and delivered after
    a delete of the same name would recreate it; no client can prevent that
    without an idempotency key, which the API lacks. So the deletes start once
    no create is in flight (a plan deletes what it listed, never what it is creating).
    """
    proxy.chaos(seed=17, rate=0.3, kinds=[
        Fault("", "", "status", status=429, retry_after=0.2), Fault("", "", "status", status=502),
        Fault("", "", "status", status=503, landed=True), Fault("", "", "status", status=504, landed=True),
        Fault("", "", "drop"), Fault("", "", "drop", landed=True),
        Fault("", "", "slow", delay=SLOW, landed=True), Fault("", "", "slow", delay=SLOW),
    ])
    outcomes: dict[str, str] = {}
    names = [unique("fp-chaos") for _ in range(8)]
    for name in names:
        try:
            faulty.create_statement(name, DDL, stopped=True)
            outcomes[name] = "created"
        except ConfluentError:
            outcomes[name] = "failed"
    proxy.wait_idle()
    for name in names[::2]:
        try:
            faulty.delete_statement(name, timeout=60)
            outcomes[name] = "deleted"
        except ConfluentError:
            outcomes[name] = "delete failed"
    proxy.wait_idle()
    proxy.clear()
    listed = [s.name for s in direct.list_statements() if s.name in outcomes]
    for name, outcome in outcomes.items():
        expected = {"created": {1}, "failed": {0, 1}, "deleted": {0}, "delete failed": {0, 1}}[outcome]
        assert listed.count(name) in expected, (name, outcome, listed.count(name))
    assert len(set(outcomes.values()) & {"created", "deleted"}) == 2  # the seed exercises both paths

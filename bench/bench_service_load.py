"""Load on the local service as a real background process (its own data folder, its own JVM).

1. N statements (default 1000) created by 8 client threads (created stopped: the
   engine records them and never runs them), then listed with paging at page
   sizes 100 and 10: each exactly once.
2. 50 concurrent readers of one SELECT's results (5000 rows, 5 pages each).
3. Statement text size: a 1 MB INSERT ... VALUES (accepted, as Confluent's 4 MB
   limit allows, and run), and a text over 4 MB (refused with Confluent's words).
4. Names that are paths ('/', '..') refused.
5. What the service and its JVM have open or mapped outside the data folder,
   and whether it is still up; then `stop` leaves no process of its group.

Run: python bench/bench_service_load.py [--statements 1000] [--readers 50]
"""

from __future__ import annotations

import argparse
import getpass
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from shift_left_dagster.confluent.client import ClientSettings, ConfluentClient, bind_to_data_dir  # noqa: E402
from shift_left_dagster.confluent.errors import BadRequest  # noqa: E402
from shift_left_dagster.local import process  # noqa: E402
from shift_left_dagster.local.health import probe  # noqa: E402
from shift_left_dagster.local.lifetime import group_members  # noqa: E402
from shift_left_dagster.project.config import local_credentials, local_defaults  # noqa: E402
from tests.integration.load import (  # noqa: E402
    CONFLUENT_MAX_SQL_BYTES,
    MB,
    create_stopped,
    files_outside,
    list_run,
    read_results,
    timed_parallel,
)
from tests.integration.support import SNAPSHOT, run  # noqa: E402


def client(url: str, data_dir: Path, page_size: int = 100) -> ConfluentClient:
    settings = ClientSettings.from_config(bind_to_data_dir(local_defaults(url), data_dir))
    return ConfluentClient(settings.model_copy(update={"page_size": page_size, "read_timeout": 300.0}))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--statements", type=int, default=1000)
    parser.add_argument("--readers", type=int, default=50)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-load-")) / "service"
    started = time.perf_counter()
    info = process.start(data, port=0)
    while not ((health := probe(info.url)) and health.ready):
        time.sleep(0.2)
    print(f"service pid {info.pid} on {info.url}, data {data}: ready (Spark up) in "
          f"{time.perf_counter() - started:.1f} s")
    try:
        api = client(info.url, data)

        # 1. create + list
        names = [f"load-{i:05d}" for i in range(args.statements)]
        timings = create_stopped(api, "bench", names, threads=8)
        print(f"create: {timings.describe('statements')}")
        for page_size in (100, 10):
            began = time.perf_counter()
            listed = list_run(client(info.url, data, page_size), "bench")
            exact = len(listed) == len(set(listed)) == len(names) and set(listed) == set(names)
            pages = -(-len(listed) // page_size)
            print(f"list page_size={page_size}: {len(listed)} statements in {pages} pages, "
                  f"{time.perf_counter() - began:.2f} s, each exactly once: {exact}")
        gets, _ = timed_parallel(names[:200], api.get_statement, 8)
        print(f"get by name with {len(names)} statements stored: {gets.describe('GETs')}")

        # 2. concurrent readers
        run(api, "rows-ddl", "CREATE TABLE rows5k (id INT, v STRING) DISTRIBUTED INTO 1 BUCKETS")
        run(api, "rows-insert", "INSERT INTO rows5k VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(5000)))
        run(api, "rows-select", "SELECT id, v FROM rows5k", properties=SNAPSHOT)  # it completes
        readers, results = read_results(api, "rows-select", args.readers)
        same = all(len(rows) == 5000 and [r.row for r in rows] == [r.row for r in results[0]] for rows in results)
        print(f"results: {readers.describe('readers of 5000 rows')}; all complete and identical: {same}")

        # 3. text size
        values = []
        size = 0
        while size < MB:
            values.append(f"({len(values)}, '{'v' * 40}{len(values)}')")
            size += len(values[-1]) + 2
        big = "INSERT INTO rows_1mb VALUES " + ", ".join(values)
        run(api, "rows-1mb-ddl", "CREATE TABLE rows_1mb (id INT, v STRING) DISTRIBUTED INTO 1 BUCKETS")
        began = time.perf_counter()
        api.create_statement("rows-1mb", big)
        accepted = time.perf_counter() - began
        done = api.wait_for_phase("rows-1mb", {"COMPLETED", "FAILED"}, timeout=600)
        print(f"1 MB statement ({len(big.encode()) / MB:.2f} MB, {len(values)} rows): accepted in {accepted:.2f} s, "
              f"{done.phase} after {time.perf_counter() - began:.1f} s {done.status.detail or ''}".rstrip())
        began = time.perf_counter()
        try:
            api.create_statement("rows-5mb", f"SELECT 1 /* {'x' * CONFLUENT_MAX_SQL_BYTES} */")
            print("over 4 MB: ACCEPTED (unexpected)")
        except BadRequest as error:
            print(f"over 4 MB: refused with HTTP {error.status} in {time.perf_counter() - began:.2f} s: "
                  f"{error.detail}")

        # 4. names that are paths
        url = f"{info.url}/sql/v1/organizations/{api.settings.organization_id}/environments/" \
              f"{api.settings.environment_id}/statements"
        refused = 0
        bad_names = ["a/b", "..", "../escape", "a/../b", "."]
        for name in bad_names:
            answer = requests.post(url, json={"name": name, "spec": {"statement": "SELECT 1"}},
                                   auth=local_credentials(), timeout=10)
            refused += answer.status_code == 400
        print(f"names that are paths: {refused}/{len(bad_names)} refused with HTTP 400")

        # 5. confinement and health
        members = group_members(info.pid)
        outside = {pid: files_outside(pid, data) for pid in members}
        jvms = [pid for pid in members if pid != info.pid]
        perf = [pid for pid in jvms if Path(f"/tmp/hsperfdata_{getpass.getuser()}/{pid}").exists()]
        stray = {pid: files for pid, files in outside.items() if files}
        print(f"processes of the service's group: {len(members)}; files open or mapped under /tmp, /var/tmp, "
              f"/dev/shm outside the data folder: {sum(len(v) for v in stray.values())}{f' {stray}' if stray else ''}; "
              f"hsperfdata files: {len(perf)}")
        print(f"memory: service {rss_mb(info.pid):.0f} MB, JVM {sum(rss_mb(p) for p in jvms):.0f} MB; "
              f"still up: {process.status(data).running}")
    finally:
        began = time.perf_counter()
        process.stop(data)
        left = group_members(info.pid)
        print(f"stop: {time.perf_counter() - began:.1f} s; processes left in its group: {len(left)}")
        shutil.rmtree(data.parent, ignore_errors=True)


if __name__ == "__main__":
    main()

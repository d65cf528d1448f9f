"""The second property's variants (generated.split_variants): an outer interval join or a LEFT temporal
join gets one with a source idle during the first engine run, judged on the changelog kinds only, as
Flink never reads a row of it late; other multi-source cases get none."""

from __future__ import annotations

from dataclasses import replace

from tests.oracle.corpus import CORPUS, load_case
from tests.oracle.drawn import Generated
from tests.oracle.generated import split_variants

FULL = load_case(CORPUS / "join_full_interval_one_run.yaml")
TEMPORAL = load_case(CORPUS / "join_temporal_version_out_of_order.yaml")


def test_an_outer_interval_join_gets_a_variant_with_its_second_source_idle_in_the_first_run() -> None:
    variants, original = split_variants([Generated(case=FULL, kind="interval_join", single_source=False,
                                                   features=["interval:full"])])
    assert [v.name for v in variants] == [f"{FULL.name}_idle_between"]
    idle = variants[0]
    assert original == {idle.name: FULL.name}
    assert idle.rows == {"fio_l": FULL.all_rows("fio_l")} and idle.more_rows == {"fio_r": FULL.all_rows("fio_r")}
    assert not idle.judge_rows and FULL.judge_rows


def test_an_inner_interval_join_and_a_regular_join_get_none() -> None:
    inner = Generated(case=replace(FULL, name="inner"), kind="interval_join", single_source=False,
                      features=["interval:inner"])
    regular = Generated(case=replace(FULL, name="regular"), kind="join", single_source=False, features=[])
    assert split_variants([inner, regular]) == ([], {})


def test_a_left_temporal_join_gets_one_with_its_versions_in_the_second_run_and_an_inner_none() -> None:
    left = Generated(case=TEMPORAL, kind="temporal_join", single_source=False, features=["temporal:left"])
    inner = Generated(case=replace(TEMPORAL, name="inner"), kind="temporal_join", single_source=False,
                      features=["temporal:inner"])
    variants, original = split_variants([left, inner])
    assert original == {f"{TEMPORAL.name}_idle_between": TEMPORAL.name}
    first, second = [t.name for t in TEMPORAL.sources]
    assert variants[0].rows == {first: TEMPORAL.all_rows(first)}
    assert variants[0].more_rows == {second: TEMPORAL.all_rows(second)} and not variants[0].judge_rows

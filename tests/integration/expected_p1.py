"""The p1 pipeline's sinks computed in plain Python from the seed rows (Flink semantics, all input read).

Column order follows each table's DDL.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

CENT = Decimal("0.01")


def _trim(text: str | None) -> str | None:
    return None if text is None else text.strip(" ")


def _latest(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """ROW_NUMBER() OVER (PARTITION BY key ORDER BY $rowtime DESC) = 1, NULL keys dropped first."""
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row[key] is not None and (row[key] not in latest or row["event_ts"] >= latest[row[key]]["event_ts"]):
            latest[row[key]] = row
    return list(latest.values())


def src_table_1(orders: list[dict[str, Any]]) -> list[tuple]:
    return [
        (r["order_id"], r["customer_id"], r["product_id"], r["quantity"], r["unit_price"],
         (r["quantity"] * r["unit_price"]).quantize(CENT), _trim(r["order_status"] or "unknown").upper(), r["event_ts"])
        for r in _latest(orders, "order_id")
    ]


def src_table_2(customers: list[dict[str, Any]]) -> list[tuple]:
    return [
        (r["customer_id"], f"{_trim(r['first_name'])} {_trim(r['last_name'])}", _trim(r["email"]).lower(),
         (r["country_code"] or "ZZ").upper(), (r["segment"] or "unassigned").upper(), r["event_ts"])
        for r in _latest(customers, "customer_id")
    ]


def src_table_3(payments: list[dict[str, Any]]) -> list[tuple]:
    rows = []
    for r in payments:
        status = _trim(r["payment_status"]).upper() if r["payment_status"] is not None else None
        if r["order_id"] is None or r["amount"] is None or status not in ("CAPTURED", "REFUNDED"):
            continue
        brand = json.loads(r["gateway_response"]).get("card_brand") if r["gateway_response"] else None
        signed = -r["amount"] if status == "REFUNDED" else r["amount"]
        rows.append((r["payment_id"], r["order_id"], _trim(r["payment_method"]).lower(), status, brand or "n/a",
                     signed, r["event_ts"]))
    return rows


def int_table_1(src1: list[tuple], src2: list[tuple]) -> list[tuple]:
    customers = {c[0]: c for c in src2}
    rows = []
    for order_id, customer_id, product_id, quantity, _price, amount, status, ts in src1:
        customer = customers.get(customer_id)
        rows.append((order_id, customer_id, customer[1] if customer else "UNKNOWN CUSTOMER",
                     customer[4] if customer else "UNASSIGNED", customer[3] if customer else "ZZ",
                     product_id, quantity, amount, status, ts))
    return rows


def int_table_2(src3: list[tuple]) -> list[tuple]:
    groups: dict[str, list[tuple]] = {}
    for payment in src3:
        groups.setdefault(payment[1], []).append(payment)
    return [
        (order_id, sum(p[5] for p in ps).quantize(CENT), len(ps), sum(1 for p in ps if p[3] == "REFUNDED"),
         max(p[6] for p in ps))
        for order_id, ps in groups.items()
    ]


def fct_order(int1: list[tuple], int2: list[tuple]) -> list[tuple]:
    payments = {p[0]: p for p in int2}
    rows = []
    for order_id, customer_id, name, segment, country, _product, _qty, amount, status, ts in int1:
        payment = payments.get(order_id)
        paid = payment[1] if payment else Decimal("0.00")
        count = payment[2] if payment else 0
        if count == 0:
            state = "UNPAID"
        elif paid >= amount:
            state = "PAID"
        elif paid <= 0:
            state = "REFUNDED"
        else:
            state = "PARTIAL"
        rows.append((order_id, ts.date(), customer_id, name, segment, country, status, amount, paid,
                     (amount - paid).quantize(CENT), count, state, ts))
    return rows


def p1(orders: list[dict[str, Any]], customers: list[dict[str, Any]],
       payments: list[dict[str, Any]]) -> dict[str, list[tuple]]:
    """Every p1 table's rows."""
    s1, s2, s3 = src_table_1(orders), src_table_2(customers), src_table_3(payments)
    i1, i2 = int_table_1(s1, s2), int_table_2(s3)
    return {"src_table_1": s1, "src_table_2": s2, "src_table_3": s3, "int_table_1": i1, "int_table_2": i2,
            "fct_order": fct_order(i1, i2)}

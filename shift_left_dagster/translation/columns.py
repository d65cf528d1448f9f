"""The system columns every stored record carries, as Flink SQL names them."""

ROWTIME = "$rowtime"
PARTITION = "$partition"
OFFSET = "$offset"
OP = "$op"
SYSTEM_COLUMNS = (ROWTIME, PARTITION, OFFSET, OP)

"""Flink SQL -> Spark SQL, shared by the local engine (which runs statements) and the checks (which
recompute a DML over sink data): one translation, so both mean the same thing by a Flink query."""

"""shift-left-dagster: Confluent Cloud Flink SQL pipelines as Dagster assets."""

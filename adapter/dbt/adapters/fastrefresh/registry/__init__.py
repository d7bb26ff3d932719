"""The registry: the queryable tables that publish the protocol's state once per dbt
invocation, and the migration of older registries."""

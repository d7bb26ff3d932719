"""The fast-refresh protocol's durable facts (logs' and views' configurations and
states), the reasons behind refresh decisions, the change-vector encoding, and the
environment every step runs in."""

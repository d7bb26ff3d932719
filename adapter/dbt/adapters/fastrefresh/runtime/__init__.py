"""Where statements run: the embedded Spark session and its jars, the executor, the
process's state, the clock and the fault points the crash tests use."""

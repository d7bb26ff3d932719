"""The planner: a view's query analysed and planned (analysis), and its statements (sqlgen).

Pure: no Spark, no I/O; tested on SQL alone, and pinned by the golden SQL files."""

"""TNP planner: cost of stages and iterations, pipeline-schedule simulator, makespan-aware search, baselines."""

"""Measuring achievable peaks: microbenchmarks per worker, launched through torchrun's agent."""

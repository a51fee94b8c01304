"""The serving benchmark: workloads, arrivals, a streaming runner and vLLM's metrics."""

"""The serving benchmark: workloads, arrivals, a streaming runner and vLLM's metrics.

The top floor of roundhouse.core, beside the guide (neither imports the other): it may
use every floor below (today instances and infra).
"""

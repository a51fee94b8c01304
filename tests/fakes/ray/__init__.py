"""The Ray STAND-IN: `ray start` (a head holding a stand-in GCS, or a node joining it) and
`ray status`, enough for vLLM's Ray executor to find a cluster, or none."""

"""The first-run guide: hardware and engine, a starter model, its download, the first chat."""

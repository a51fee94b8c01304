"""The first-run guide: this machine in a line, the engines to choose from, the starter models
sized and fitted, and the chosen one served for a first chat. The core's top floor: it may use
every layer below (the gateway and instances to serve, models and knowledge to size)."""

"""The first-run guide: this machine in a line, the engines to choose from, the starter
models sized and fitted, and the chosen one served for a first chat.

The top floor of roundhouse.core, beside bench (neither imports the other): it may use
every floor below (the gateway and instances to serve, models and knowledge to size).
"""

"""Paired Roundhouse daemons: this daemon's TLS identity, the peers it trusts, pairing, and its
client to a peer.

Floor: beside hardware, knowledge, chat and system in the core's layers (docs/adr/0029); it
uses infra and errors only. The server glues it to the gateway, the instances and the routes.
"""

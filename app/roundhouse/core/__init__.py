"""The domain: everything the daemon knows and does, Qt-free and web-framework-free.

In floors, each using only the floors below it (pyproject's layers contract; the whole
picture in docs/architecture.md):

    bench | guide                            the serving benchmark; the first-run guide
    metrics                                  live figures per instance, and their history
    gateway                                  the OpenAI-compatible gateway, its key, LiveStats
    models                                   the Hub, downloads, Ollama pulls, the library
    instances                                engine instances: start, record, stop, recover
    engines                                  the catalog, detection, installs, launches
    supervise                                processes: start, readiness, stop, exits
    hardware | knowledge | chat | system     the machine; model files and fit; chats; login
    infra                                    SQLite, threads, transfers, jobs, feed, settings
    errors                                   the typed errors the server maps to problems
"""

"""The drivers behind the public API (``loomc.check``, ``compile``, ``run``, ``evaluate``).

The top of the stage order: each module loads a project once, calls the stages below it and
returns typed results; nothing here prints or exits. The CLI, the server and the Studio are
clients of these functions, reached through ``loomc/__init__.py``.
"""

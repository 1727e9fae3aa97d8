"""The files of some of loomc's archived routing releases (one era of them), under ``data/``.

Nothing here is imported: loomc finds the folder by the package's location
(``loomc.risk.files.archive_dirs``) when a policy names a release whose files its own wheel does
not ship. The files are the same bytes as in loomc's checkout (``loomc/risk/data``), pinned by
sha256 there (tests/risk/test_shipped_data.py).
"""

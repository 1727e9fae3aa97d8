"""`loom-conductor-v3`: the v2 row format without v2's label leaks (see generator.py)."""

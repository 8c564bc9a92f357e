"""The bottom layer: general helpers for a SYSTEM/root process on a shared node (JSON text,
case-insensitive keys, addresses, safe files, Windows security, CLI parsing, a closed stdout).
Imports nothing of ours."""

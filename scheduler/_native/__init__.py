"""Compiled hot paths built from native/*.pyx (absent when built without a compiler)."""

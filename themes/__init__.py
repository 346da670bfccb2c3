"""Bundled theme definitions (TOML data files in this folder)."""

from pathlib import Path

THEMES_DIR = Path(__file__).resolve().parent

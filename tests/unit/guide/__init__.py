"""Tests of the first-run guide: the starters, their catalog and the first steps."""

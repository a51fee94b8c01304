"""Tests of the stand-ins for programs that cannot run here."""

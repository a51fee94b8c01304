"""Tests of attaching to engines that already run, and of user-added endpoints."""

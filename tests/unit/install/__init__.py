"""Tests of engine installs: llama.cpp release builds and managed Python environments."""

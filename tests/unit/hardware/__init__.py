"""Tests of the hardware inventory on recorded outputs of real machines."""

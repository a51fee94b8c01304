"""Allow `python -m roundhouse`, the same as the `roundhouse` command."""

from roundhouse.cli.launch import main

main()

"""Allow `python -m roundhouse`, the same as the `roundhouse` command."""

from roundhouse.cli.main import main

main()

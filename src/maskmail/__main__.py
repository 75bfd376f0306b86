"""``python -m maskmail``: the ``maskmail`` command."""

from maskmail.cli import main

main()

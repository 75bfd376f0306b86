"""``python -m maskmail``: the ``maskmail`` command."""

from maskmail.cli import main

# Guarded: importing the module (as tests that import every module do) runs nothing.
if __name__ == "__main__":
    main()

"""`python -m parc` is the `parc` command."""

from parc.cli import main

if __name__ == "__main__":
    main()

"""`python -m moralsim`: the same command line as the `moralsim` script."""

from moralsim.cli import main

main()

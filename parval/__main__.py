"""`python -m parval` runs the command line."""

from parval.cli import main

main()

"""``python -m netfleet`` = the ``netfleet`` command."""

from netfleet.cli.main import main

main()

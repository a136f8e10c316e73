"""`python -m aqmlab` is the `aqmlab` command."""

from aqmlab.cli import main

if __name__ == "__main__":
    main()

"""`python -m alpineagents` runs the `alpineagents` command."""

from alpineagents.cli import main

if __name__ == "__main__":
    main(prog_name="alpineagents")

"""Run a moralsim simulation: `python simulate.py` locally, or as a Ray job:

    ray job submit --working-dir . -- python simulate.py --config run.yaml

Takes the same options as `moralsim simulate` (see `python simulate.py --help`).
"""

from moralsim.cli import simulate_script

if __name__ == "__main__":
    simulate_script()

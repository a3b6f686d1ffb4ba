"""Run a moralsim simulation: `python simulate.py` (a demo) or with `--config run.yaml`.

Takes the same options as `moralsim simulate` (see `python simulate.py --help`). Once the Ray
runtime lands, the same script is the job of `ray job submit --working-dir . -- python simulate.py`.
"""

from moralsim.cli import simulate_script

if __name__ == "__main__":
    simulate_script()

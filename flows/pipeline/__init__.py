"""The pipeline: stages, params, stage I/O, DVC dependencies and the repro runner with its stage
host and rehearsal. It never imports the command line (flows.cli)."""

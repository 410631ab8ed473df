"""One module per DVC stage: `gridbots stage NAME` runs flows/pipeline/stages/NAME.py."""

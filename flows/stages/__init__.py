"""One module per DVC stage: `gridbots stage NAME` runs flows/stages/NAME.py."""

"""What the pipeline and the command line write for people to read: the pipeline report,
tournament tables and charts, the studies' comparisons."""

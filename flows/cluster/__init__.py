"""A Dask cluster with its Prefect and MLflow servers on this machine (`gridbots cluster`)."""

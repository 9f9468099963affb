"""The "Fault tolerance" view: a FastAPI app mounted by the Airflow plugin under /ftops."""

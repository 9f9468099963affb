"""Deferrable triggers (run in Airflow's triggerer, asyncio): every wait of ftops, each with a timeout
and a failure event that says what was still missing. Sensors in ``ftops_provider.sensors`` defer on them."""

-- Second database in the compose PostgreSQL: Airflow's metadata lives beside the ftops history store.
CREATE DATABASE airflow OWNER ftops;

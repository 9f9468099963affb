# Airflow 3.3 with ftops installed from this repository's lock file (docker-compose.yml builds it).
# Java 17 is for spark-submit (SparkSubmitOperator) and the PySpark driver of the workloads.
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64

USER airflow
COPY --chown=airflow:root requirements.lock /opt/ftops/requirements.lock
# --no-deps: the lock is complete and deliberately leaves out pyspark-client (it would shadow pyspark 4.3)
RUN pip install --no-cache-dir --no-deps -r /opt/ftops/requirements.lock
COPY --chown=airflow:root . /opt/ftops
RUN pip install --no-cache-dir --no-deps /opt/ftops

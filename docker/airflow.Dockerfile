# Airflow 3.3 with ftops installed from its wheel, as users install it (docker-compose.yml builds this image).
# Stage 1 builds the wheel from the build context; stage 2 installs the locked dependencies, then the wheel,
# and keeps no copy of the sources: the image runs exactly what `pip install ftops-*.whl` installs.
FROM apache/airflow:3.3.2-python3.11 AS wheel
COPY --chown=airflow:root . /home/airflow/ftops-src
# PIP_USER off: the image turns on user installs, which pip's isolated build environment cannot combine with
RUN PIP_USER=false pip wheel --no-cache-dir --no-deps -w /home/airflow/dist /home/airflow/ftops-src

FROM apache/airflow:3.3.2-python3.11
# Java 17 is for spark-submit (SparkSubmitOperator) and the PySpark drivers of the workloads.
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64

USER airflow
COPY --chown=airflow:root requirements.lock /tmp/ftops/requirements.lock
# --no-deps: the lock is complete and deliberately leaves out pyspark-client (it would shadow pyspark 4.3)
RUN pip install --no-cache-dir --no-deps -r /tmp/ftops/requirements.lock
COPY --from=wheel --chown=airflow:root /home/airflow/dist/ /tmp/ftops/dist/
# The DAGs come from the package: thin files in Airflow's dags folder import them (ftops dags install).
RUN pip install --no-cache-dir --no-deps /tmp/ftops/dist/ftops-*.whl \
 && rm -rf /tmp/ftops \
 && mkdir -p /opt/airflow/dags \
 && ftops dags install --dags-folder /opt/airflow/dags

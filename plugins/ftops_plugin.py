"""For users who drop files into Airflow's plugins folder instead of installing ftops with pip
(then the ftops_provider package beside this file is importable because Airflow puts this folder on
sys.path). Installed with pip, the ``airflow.plugins`` entry point loads the same class."""

from ftops_provider.plugin import FtopsPlugin

__all__ = ["FtopsPlugin"]

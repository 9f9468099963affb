"""The port base of the drills on a private cluster (``ftops drill run``, ``bench drills``, ``bench partitions``):
light, so every ``ftops`` start can show it in ``--help`` without importing the drills.

Every port of a drill is an offset from one base (:class:`spark_jobs.drills.documents.DrillPorts`).
"""

# The drills' default port base: masters on 25077/25078, their UIs on 25090/25091, workers from 25100, drivers'
# UIs on 25040/25041 (BASE+40 to BASE+299 in all). Not 7000, whose masters' ports 7077/7078 are the ones
# `ftops cluster up` and the local stack (`make demo`) listen on: a drill failed next to them. Clear of every
# other default of ftops (the stack's 5433, 7077-7078, 7100+, 8080, 8090-8091, 8100+; the recovery units' UIs
# from 23400, their benchmark's 24000-24300; the redundancy benchmark's 7600-7900) and of the tests' ports
# under `make test` (11000-22999), and below 32768, where no outgoing connection's ephemeral port takes one.
DEFAULT_PORT_BASE = 25000

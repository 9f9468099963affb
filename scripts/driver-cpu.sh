#!/usr/bin/env bash
# CPU a streaming driver spends per micro-batch, to measure ftops's own per-batch work on a user's driver
# (its listeners: spark_jobs/runtime/progress_listener.py). Runs examples/sensor_alerts.py as a local[1]
# primary (2-s trigger, about 100 rows a batch) on input fed in real time; after a 60-s warm-up it reads the
# CPU of the driver's JVM and of its Python process from /proc over 60 s and divides by the micro-batches
# finished in that time. About 2.5 minutes; run from a set-up checkout (`make setup`) on an otherwise idle
# machine. The JVMs get the tests' options (C1 only, serial GC) unless JDK_JAVA_OPTIONS is set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export JDK_JAVA_OPTIONS="${JDK_JAVA_OPTIONS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
work=$(mktemp -d /tmp/ftops-driver-cpu.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
pipeline=(--pipeline examples/sensor_alerts.py --param rate=50 --param window_s=2 --param watermark_s=1
          --param sensors_p=2 --param sites_p=2)

.venv/bin/ftops workload generate "${pipeline[@]}" --input "$work/in" --realtime --duration-s 200 > "$work/feed.log" 2>&1 &
sleep 3
.venv/bin/ftops workload run "${pipeline[@]}" --role primary --input "$work/in" --output "$work/out" \
    --checkpoint "$work/checkpoint" --metrics "$work/metrics.jsonl" --master "local[1]" --trigger-s 2 \
    --duration-s 150 > "$work/driver.log" 2>&1 &
echo "warming up for 60 s (the driver's JIT and first micro-batches)"
sleep 60
jvm=$(pgrep -f "java .*run_pipeline.py.*$work" | head -1)
python=$(pgrep -f "^$PWD/.venv/bin/python .*run_pipeline.py.*$work" | head -1)
if [ -z "$jvm" ] || [ -z "$python" ]; then
    echo "driver-cpu: the driver is not running; its log:" >&2
    tail -20 "$work/driver.log" >&2
    exit 1
fi
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system, in clock ticks
hz=$(getconf CLK_TCK)
jvm0=$(ticks "$jvm"); py0=$(ticks "$python"); batches0=$(wc -l < "$work/metrics.jsonl")
echo "measuring for 60 s"
sleep 60
jvm1=$(ticks "$jvm"); py1=$(ticks "$python"); batches1=$(wc -l < "$work/metrics.jsonl")
n=$((batches1 - batches0))
awk -v n="$n" -v j=$((jvm1 - jvm0)) -v p=$((py1 - py0)) -v hz="$hz" 'BEGIN {
    printf "micro-batches %d; CPU-s per batch: JVM %.3f, Python %.3f, total %.3f\n", n, j/hz/n, p/hz/n, (j+p)/hz/n }'

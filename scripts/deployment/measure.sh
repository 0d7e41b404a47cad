#!/usr/bin/env bash
# measure.sh runs wacp-bench against each setup of docs/scale-out.md §2.5,
# a fresh one (run.sh) per run, and prints a table of the JSON reports:
#
#   inprocess   the bench's own in-process daemon (no -url)
#   embedded    one wacpd process on its embedded NATS server
#   cluster     one wacpd on a 3-node NATS cluster (replicas 3)
#   deployment  two wacpd daemons of a deployment (8 partitions) on it
#
#   scripts/deployment/measure.sh -bin /tmp/wbin -runs 3 -duration 20s -clients 8 [SETUP…]
#
# Flags: -runs R (default 3), -duration D (default 20s), -clients C (default
# 8: the root's children go round the 8 partitions, so a deployment's two
# daemons get half each), -bin DIR (wacpd, wacp-bench, nats-server; default:
# build them), -out DIR (keep the reports there; default a temporary dir).
# Each report is OUT/SETUP-RUN.json, with /proc/loadavg before and after the
# run in OUT/SETUP-RUN.load, the run's stderr in OUT/SETUP-RUN.log and the
# daemons' log lines naming stream leaders in OUT/SETUP-RUN.leaders. Setups default to all four, in that order.
set -euo pipefail

runs=3 duration=20s clients=8 bin="" out=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	-runs) runs=$2; shift 2 ;;
	-duration) duration=$2; shift 2 ;;
	-clients) clients=$2; shift 2 ;;
	-bin) bin=$2; shift 2 ;;
	-out) out=$2; shift 2 ;;
	-h | -help | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "measure.sh: unknown flag $1 (see -h)" >&2; exit 2 ;;
	*) break ;;
	esac
done
setups=("$@")
[[ ${#setups[@]} -gt 0 ]] || setups=(inprocess embedded cluster deployment)
here=$(cd "$(dirname "$0")" && pwd)
if [[ -z $out ]]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/wacp-measure.XXXXXX")
fi
mkdir -p "$out"
if [[ -z $bin ]]; then
	bin=$out/bin
	echo "measure.sh: building into $bin" >&2
	(cd "$here/../.." && go build -o "$bin/wacpd" ./cmd/wacpd && go build -o "$bin/wacp-bench" ./cmd/wacp-bench &&
		go build -o "$bin/nats-server" github.com/nats-io/nats-server/v2)
fi

bench=("$bin/wacp-bench" -json -clients "$clients" -duration "$duration")
# Run r of every setup, then run r+1 of every setup: a load that others
# put on the machine for a while falls on all setups alike.
for ((r = 1; r <= runs; r++)); do
	for s in "${setups[@]}"; do
		f=$out/$s-$r
		echo "measure.sh: $s run $r of $runs" >&2
		cat /proc/loadavg >"$f.load"
		withURL=(sh -c '"$@" -url "$WACP_URL" $WACP_BENCH_PIDS' sh "${bench[@]}")
		case "$s" in
		inprocess) cmd=("${bench[@]}") ;;
		embedded) cmd=("$here/run.sh" -bin "$bin" -keep -embedded -- "${withURL[@]}") ;;
		cluster) cmd=("$here/run.sh" -bin "$bin" -keep -n 1 -- "${withURL[@]}") ;;
		deployment) cmd=("$here/run.sh" -bin "$bin" -keep -n 2 -p 8 -- "${withURL[@]}") ;;
		*) echo "measure.sh: unknown setup $s" >&2; exit 2 ;;
		esac
		ok=1
		"${cmd[@]}" >"$f.json" 2>"$f.log" || ok=0
		# run.sh prints the environment first: keep the daemons' log lines
		# naming stream leaders, then the report only.
		dir=$(sed -n "s/^export WACP_DEPLOYMENT_DIR='\(.*\)'$/\1/p" "$f.json" 2>/dev/null || true)
		if [[ -n $dir && -d $dir ]]; then
			grep -h 'leader=' "$dir"/d*.log >"$f.leaders" 2>/dev/null || true
			rm -rf "$dir"
		fi
		sed -i -n '/^{/,$p' "$f.json"
		if ((!ok)); then
			echo "measure.sh: $s run $r failed: $(grep -v '^run.sh: stopped' "$f.log" | tail -n 1)" >&2
			rm -f "$f.json"
		fi
		cat /proc/loadavg >>"$f.load"
	done
done

# One row per run: rate, ack and signal latencies (ms), CPU per checkpoint
# (µs) of the bench (agents; in-process: daemon too), the wacpd processes,
# the NATS nodes and all of them, and how busy the machine was: the bench's
# fixed computation before and after the run (ms; 535-560 on this machine
# when quiet, more when others share the cores; the run's own processes
# are not running at either moment) and the 1-minute load average before
# and after (which counts the run's own processes).
printf '%-11s %3s %6s %6s %6s %6s %7s %9s %6s %6s %6s  %-9s  %s\n' setup run cp/s ack50 ack99 sig50 sig99 cpu:bench wacpd nats all calc load
for s in "${setups[@]}"; do
	for ((r = 1; r <= runs; r++)); do
		f=$out/$s-$r
		[[ -s $f.json ]] || continue
		load=$(awk '{printf "%s%s", (NR>1?"/":""), $1}' "$f.load")
		jq -r --arg s "$s" --arg r "$r" --arg load "$load" '
			def ms: . / 1e6 | . * 100 | round / 100;
			def us: . / 1e3 | round;
			([.processes[]? | select(.name | startswith("d")) | .cpu_per_checkpoint_ns] | add // 0) as $d |
			([.processes[]? | select(.name | startswith("n")) | .cpu_per_checkpoint_ns] | add // 0) as $n |
			[$s, $r, (.checkpoints_per_s | round), (.ack.p50_ns | ms), (.ack.p99_ns | ms), (.signal.p50_ns | ms), (.signal.p99_ns | ms),
			 (.cpu_per_checkpoint_ns | us), ($d | us), ($n | us), ((.cpu_per_checkpoint_ns + $d + $n) | us),
			 "\(.machine.before_ns / 1e6 | round)/\(.machine.after_ns / 1e6 | round)", $load] | @tsv' "$f.json"
	done
done | awk -F'\t' '{printf "%-11s %3s %6s %6s %6s %6s %7s %9s %6s %6s %6s  %-9s  %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13}'
echo "measure.sh: reports in $out" >&2

#!/usr/bin/env bash
# run.sh starts wacpd on 127.0.0.1 in a new temporary directory: a 3-node
# NATS cluster and N daemons sharing it (docs/scale-out.md), or one daemon
# on its embedded server (-embedded). It prints the environment a client
# needs (WACP_URL, WACP_TOKEN, WACP_NATS_TOKEN) and writes it to DIR/env.
# Then it runs the command after --, with that environment, or waits until
# interrupted; either way it stops every process it started when it ends.
#
#   scripts/deployment/run.sh -n 2 -- wacp status
#   scripts/deployment/run.sh -n 1 -replicas 3 -- sh -c 'wacp-bench -url "$WACP_URL" $WACP_BENCH_PIDS'
#   scripts/deployment/run.sh -embedded          # prints the env and waits for ^C
#
# Flags:
#   -n N          daemons (default 1). With more than one, each node maps the
#                 agent subjects to -p partitions and daemon i owns the i-th
#                 contiguous share of them.
#   -p P          partitions of a deployment (default 8; P >= N).
#   -interleave   daemon i owns partitions i, i+N, i+2N, … instead of the i-th
#                 contiguous share: the root's children go round the
#                 partitions from 0, so with contiguous shares and P much
#                 larger than N the first P/N of them all land on d1.
#   -replicas R   the daemons' -replicas (default: wacpd's own, 3 on a cluster).
#   -embedded     one daemon on its embedded NATS server, no cluster.
#   -bin DIR      directory holding wacpd and nats-server; default: build
#                 both from this repository into the temporary directory.
#   -keep         leave the temporary directory (logs, data) after the stop.
# $WACPD_FLAGS is appended to every wacpd's command line (-lease-ttl 15s, …).
#
# The environment, in DIR/env, also holds WACP_DEPLOYMENT_DIR, WACP_PIDS
# (NAME=PID of every process: d1 …, n1 n2 n3) and WACP_BENCH_PIDS (the same
# as wacp-bench -pid flags).
set -euo pipefail

daemons=1 partitions=8 replicas="" embedded=0 bin="" keep=0 interleave=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) daemons=$2; shift 2 ;;
	-p) partitions=$2; shift 2 ;;
	-replicas) replicas=$2; shift 2 ;;
	-embedded) embedded=1; shift ;;
	-interleave) interleave=1; shift ;;
	-bin) bin=$2; shift 2 ;;
	-keep) keep=1; shift ;;
	--) shift; break ;;
	-h | -help | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown flag $1 (see -h)" >&2; exit 2 ;;
	esac
done
if ! [[ $daemons =~ ^[1-9][0-9]*$ && $partitions =~ ^[1-9][0-9]*$ ]] || ((partitions < daemons)); then
	echo "run.sh: want -n >= 1 and -p >= -n (got -n $daemons -p $partitions)" >&2
	exit 2
fi
if ((embedded && daemons > 1)); then
	echo "run.sh: -embedded runs one daemon" >&2
	exit 2
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/wacp-deployment.XXXXXX")
pids=() # every process started, in start order
names=()

stop() {
	local rc=$?
	trap - EXIT INT TERM
	# Daemons first (newest first), then the NATS nodes: SIGTERM, then
	# SIGKILL whatever is left after 30s.
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		if [[ ${names[i]} == d* ]]; then
			wait_gone "${pids[i]}" 30 || kill -KILL "${pids[i]}" 2>/dev/null || true
		fi
	done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		wait_gone "${pids[i]}" 30 || kill -KILL "${pids[i]}" 2>/dev/null || true
	done
	if ((keep)); then
		echo "run.sh: stopped; logs and data in $dir" >&2
	else
		rm -rf "$dir"
	fi
	exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_gone PID SECONDS reports whether PID ended within SECONDS.
wait_gone() {
	local n=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null; do
		((n-- > 0)) || return 1
		sleep 0.1
	done
	wait "$1" 2>/dev/null || true
}

# free_port sets port to a port of 127.0.0.1 nobody listens on and that
# this script has not handed out yet (not in a subshell: it keeps taken).
# It picks below the kernel's ephemeral range, which outgoing connections
# take ports from between this check and the bind.
taken=" "
read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral=32768
((ephemeral > 11024)) || ephemeral=32768 # a range that starts low: pick below the usual one
free_port() {
	for _ in $(seq 200); do
		port=$((10000 + RANDOM % (ephemeral - 10000)))
		[[ $taken == *" $port "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			taken+="$port "
			return
		fi
	done
	echo "run.sh: no free port found" >&2
	exit 1
}

# started NAME PID records a started process.
started() { names+=("$1"); pids+=("$2"); }

# alive NAME PID fails, showing the log, if the process has ended.
alive() {
	if ! kill -0 "$2" 2>/dev/null; then
		echo "run.sh: $1 exited; its log:" >&2
		tail -n 40 "$dir/$1.log" >&2
		return 1
	fi
}

if [[ -z $bin ]]; then
	bin=$dir/bin
	root=$(cd "$(dirname "$0")/../.." && pwd)
	echo "run.sh: building wacpd and nats-server into $bin" >&2
	(cd "$root" && go build -o "$bin/wacpd" ./cmd/wacpd && go build -o "$bin/nats-server" github.com/nats-io/nats-server/v2)
fi
for b in wacpd nats-server; do
	[[ -x $bin/$b ]] || { echo "run.sh: no $bin/$b" >&2; exit 1; }
done

token=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
urls=""
nats_args=()
if ((!embedded)); then
	mapping=""
	if ((daemons > 1)); then
		mapping="mappings = { \"wacp.v1.agent.*.>\": \"wacp.v1.p.{{partition($partitions,1)}}.agent.{{wildcard(1)}}.>\" }"
	fi
	declare -a cport mport rport
	routes=""
	for i in 1 2 3; do
		free_port; cport[i]=$port
		free_port; mport[i]=$port
		free_port; rport[i]=$port
		routes+="${routes:+, }\"nats-route://127.0.0.1:${rport[i]}\""
		urls+="${urls:+,}nats://127.0.0.1:${cport[i]}"
	done
	for i in 1 2 3; do
		mkdir -p "$dir/n$i"
		cat >"$dir/n$i/nats.conf" <<-EOF
			server_name: "n$i"
			listen: "127.0.0.1:${cport[i]}"
			http: "127.0.0.1:${mport[i]}"
			authorization { token: "$token" }
			jetstream { store_dir: "$dir/n$i/jetstream" }
			cluster {
			  name: "wacp"
			  listen: "127.0.0.1:${rport[i]}"
			  routes: [$routes]
			}
			$mapping
		EOF
		"$bin/nats-server" -c "$dir/n$i/nats.conf" >"$dir/n$i.log" 2>&1 &
		started "n$i" $!
	done
	# Ready when every node's health check (JetStream with a meta leader)
	# says ok.
	for i in 1 2 3; do
		for t in $(seq 300); do
			alive "n$i" "${pids[i - 1]}"
			curl -fsS "http://127.0.0.1:${mport[i]}/healthz" 2>/dev/null | grep -q '"ok"' && break
			((t < 300)) || { echo "run.sh: n$i not healthy after 30s" >&2; exit 1; }
			sleep 0.1
		done
	done
	nats_args=(-nats-url "$urls" -nats-token "$token")
	[[ -n $replicas ]] && nats_args+=(-replicas "$replicas")
fi

# start_daemon N [flags…] starts daemon dN and waits for its wacpd.json.
start_daemon() {
	local n=$1
	shift
	mkdir -p "$dir/d$n"
	# shellcheck disable=SC2086 # WACPD_FLAGS is split on purpose
	"$bin/wacpd" -data "$dir/d$n/data" -log-level info "$@" ${WACPD_FLAGS:-} >"$dir/d$n.log" 2>&1 &
	local pid=$! t0
	t0=$(date +%s%N)
	started "d$n" "$pid"
	for t in $(seq 1200); do
		alive "d$n" "$pid"
		if [[ -s $dir/d$n/data/wacpd.json ]]; then
			echo "run.sh: d$n ready in $((($(date +%s%N) - t0) / 1000000)) ms" >&2
			return
		fi
		((t < 1200)) || { echo "run.sh: d$n wrote no wacpd.json in 120s" >&2; exit 1; }
		sleep 0.1
	done
}

if ((embedded)); then
	free_port
	start_daemon 1 -listen "127.0.0.1:$port"
	urls=nats://127.0.0.1:$port
	token=""
elif ((daemons == 1)); then
	start_daemon 1 -listen 127.0.0.1:0 "${nats_args[@]}"
else
	# Daemon i owns partitions [i*P/N, (i+1)*P/N), or with -interleave
	# those equal to i modulo N; the first makes the deployment record, so
	# the others start after it is ready.
	for ((i = 0; i < daemons; i++)); do
		own=$((i * partitions / daemons))-$(((i + 1) * partitions / daemons - 1))
		if ((interleave)); then
			own=$(seq -s, "$i" "$daemons" $((partitions - 1)))
		fi
		start_daemon $((i + 1)) -listen 127.0.0.1:0 "${nats_args[@]}" -partitions "$partitions" -own "$own" -daemon-id "d$((i + 1))"
	done
fi

admin=$(cat "$dir/d1/data/admin.token")
pidlist="" benchpids=""
for i in "${!pids[@]}"; do
	pidlist+="${pidlist:+ }${names[i]}=${pids[i]}"
	benchpids+="${benchpids:+ }-pid ${names[i]}=${pids[i]}"
done
{
	echo "export WACP_URL='$urls'"
	echo "export WACP_TOKEN='$admin'"
	if [[ -n $token ]]; then echo "export WACP_NATS_TOKEN='$token'"; fi
	echo "export WACP_DEPLOYMENT_DIR='$dir'"
	echo "export WACP_PIDS='$pidlist'"
	echo "export WACP_BENCH_PIDS='$benchpids'"
} >"$dir/env"
cat "$dir/env"
# shellcheck disable=SC1091
. "$dir/env"

if [[ $# -gt 0 ]]; then
	"$@"
else
	echo "run.sh: running; ^C stops everything" >&2
	while :; do
		for i in "${!pids[@]}"; do
			alive "${names[i]}" "${pids[i]}" || exit 1
		done
		sleep 1
	done
fi

#!/usr/bin/env bash
# Start, stop or describe a local ClickHouse cluster for tests: four servers as 2 shards × 2
# replicas over one private ZooKeeper, all on loopback.
#
#   scripts/clickhouse-cluster.sh start DIR   start the cluster whose files all live in DIR; print its URL
#   scripts/clickhouse-cluster.sh stop DIR    stop the cluster started in DIR
#   scripts/clickhouse-cluster.sh env DIR     print `export TRUEUP_TEST_CLUSTER=<url>` for it
#   scripts/clickhouse-cluster.sh stop-node DIR K    kill node K (1-4) alone (SIGKILL), as a lost node
#   scripts/clickhouse-cluster.sh start-node DIR K   start node K again, on its ports and config
#
# The URL names every node and the cluster:
#   clickhouse://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3,127.0.0.1:P4/default?cluster=trueup
# Nodes 1 and 2 are shard 1's replicas, 3 and 4 shard 2's. The cluster `trueup` is in every node's
# remote_servers, with internal_replication (a Distributed table writes one replica per shard and
# ReplicatedMergeTree carries the rows to the other), macros {shard} and {replica} per node, and
# distributed DDL (ON CLUSTER) through ZooKeeper.
#
# ZooKeeper is Debian's `zookeeper` package, installed when missing (no system service is
# started). When it cannot run here (or TRUEUP_CLUSTER_NO_ZOOKEEPER=1) the cluster is 2 shards ×
# 1 replica without replication or ON CLUSTER DDL, and the script says so; DIR/topology holds
# "2x2" or "2x1" either way.
#
# Each node is a server like scripts/clickhouse.sh starts (whose functions this script uses), in
# DIR/node1 … DIR/node4, plus DIR/nodeK/config.d/cluster.xml; ZooKeeper lives in DIR/zookeeper.
set -euo pipefail

# shellcheck source=clickhouse.sh
source "$(dirname "${BASH_SOURCE[0]}")/clickhouse.sh"

die() { echo "clickhouse-cluster.sh: $*" >&2; exit 1; }
log() { echo "clickhouse-cluster.sh: $*" >&2; }

usage() {
	echo "usage: $0 start|stop|env DIR, or $0 stop-node|start-node DIR K" >&2
	exit 2
}

readonly ZK_JAR=/usr/share/java/zookeeper.jar
readonly ZK_TIMEOUT=20
readonly CLUSTER=trueup
NODES=4

# Per node, filled in before any server starts: node_config writes them into its config.
declare -A SHARD_OF REPLICA_OF INTER_OF
ZK_PORT=""
NATIVE_PORTS=()

zk_alive() {
	local pid=$1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		grep -q zookeeper "/proc/$pid/cmdline" 2>/dev/null
}

# zk_ok reports whether a ZooKeeper on port $1 serves requests: `srvr` names its mode only then.
# (`ruok` answers imok before sessions are served: a node whose DDL worker connected then kept no
# ZooKeeper, and 18.16 crashed on the first ON CLUSTER statement, NULL pointer in
# zkutil::ZooKeeper::createImpl: seen in a clean-clone run.)
zk_ok() {
	local out
	out=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null) || true
	[[ $out == *"Mode: standalone"* ]]
}

# start_zookeeper starts a standalone ZooKeeper in DIR/zookeeper on a free port in 20300-20699
# and sets ZK_PORT; it returns 1 (having said why) when ZooKeeper cannot run here.
start_zookeeper() {
	local dir=$1/zookeeper pid i p start=$((RANDOM % 400))
	if [[ ! -f $ZK_JAR ]]; then
		(apt_install zookeeper) || true
	fi
	if [[ ! -f $ZK_JAR ]] || ! command -v java >/dev/null; then
		log "ZooKeeper cannot run here (no $ZK_JAR or no java)"
		return 1
	fi
	mkdir -p "$dir/data" "$dir/log"
	for ((i = 0; i < 400; i++)); do
		p=$((20300 + (start + i) % 400))
		port_in_use "$p" || break
	done
	port_in_use "$p" && { log "no free port for ZooKeeper in 20300-20699"; return 1; }
	cat >"$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$p
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr
CFG
	(exec 9>&- && cd "$dir" && exec setsid java -Xmx256m -Dzookeeper.log.dir="$dir/log" \
		-cp "$ZK_JAR" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
		</dev/null >>"$dir/log/stdout.log" 2>&1) &
	pid=$!
	echo "$pid" >"$dir/pid"
	for ((i = 0; i < ZK_TIMEOUT * 10; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "ZooKeeper exited during startup:"
			tail -n 20 "$dir/log/stdout.log" >&2 || true
			rm -f "$dir/pid"
			return 1
		fi
		if zk_ok "$p"; then
			ZK_PORT=$p
			return 0
		fi
		sleep 0.1
	done
	log "ZooKeeper did not answer on port $p within ${ZK_TIMEOUT}s"
	stop_zookeeper "$1"
	return 1
}

stop_zookeeper() {
	local dir=$1/zookeeper pid
	[[ -f $dir/pid ]] || return 0
	pid=$(cat "$dir/pid")
	if zk_alive "$pid"; then
		signal_and_wait TERM "$pid" zk_alive 100 0.1
		zk_alive "$pid" && kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "$dir/pid"
}

# pick_node_ports fills NATIVE_PORTS with one free native port per node (19100-19499), each with
# its HTTP port 400 above and its interserver port 800 above free too.
pick_node_ports() {
	local start=$((RANDOM % 400)) i p
	NATIVE_PORTS=()
	for ((i = 0; i < 400 && ${#NATIVE_PORTS[@]} < NODES; i++)); do
		p=$((19100 + (start + i) % 400))
		if ! port_in_use "$p" && ! port_in_use $((p + 400)) && ! port_in_use $((p + 800)); then
			NATIVE_PORTS+=("$p")
		fi
	done
	((${#NATIVE_PORTS[@]} == NODES))
}

# node_config is called by write_config (clickhouse.sh) for each node's directory.
node_config() {
	local dir=$1 native=$2 k shard replica n=$NODES
	mkdir -p "$dir/config.d"
	{
		echo '<?xml version="1.0"?>'
		echo '<yandex>'
		echo "    <interserver_http_host>127.0.0.1</interserver_http_host>"
		echo "    <interserver_http_port>${INTER_OF[$dir]}</interserver_http_port>"
		echo "    <macros><shard>${SHARD_OF[$dir]}</shard><replica>${REPLICA_OF[$dir]}</replica></macros>"
		if [[ -n $ZK_PORT ]]; then
			echo "    <zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node><session_timeout_ms>10000</session_timeout_ms></zookeeper>"
			echo "    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>"
		fi
		echo "    <remote_servers><$CLUSTER>"
		for shard in 1 2; do
			echo "        <shard><internal_replication>$([[ -n $ZK_PORT ]] && echo true || echo false)</internal_replication>"
			for k in $(seq 0 $((n - 1))); do
				[[ $((k * 2 / n + 1)) == "$shard" ]] || continue
				echo "            <replica><host>127.0.0.1</host><port>${NATIVE_PORTS[$k]}</port></replica>"
			done
			echo "        </shard>"
		done
		echo "    </$CLUSTER></remote_servers>"
		echo '</yandex>'
	} >"$dir/config.d/cluster.xml"
	: "$native"
}

# start_cluster starts the cluster in DIR and prints its URL. A start that fails once the
# servers are up (a node that dies, a ZooKeeper session that never comes, distributed DDL that
# never goes through) is retried from nothing, twice: a clean-clone CI run saw node1 die while the
# cluster came up, and a second start went through.
start_cluster() {
	local dir=$1 t0 k attempt
	t0=$(date +%s%N)
	[[ -x $SERVER && -x $CLIENT ]] || install_clickhouse
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	for ((k = 1; k <= 4; k++)); do
		if [[ -f $dir/node$k/pid ]] && alive "$(cat "$dir/node$k/pid")"; then
			die "a cluster is already running from $dir (node$k, pid $(cat "$dir/node$k/pid"))"
		fi
	done
	for attempt in 1 2 3; do
		if start_cluster_once "$dir"; then
			log "cluster $CLUSTER ($(cat "$dir/topology")) up in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
			cat "$dir/url"
			return 0
		fi
		dead_nodes "$dir"
		stop_cluster "$dir" 2>/dev/null
		rm -rf "$dir"/node[1-4] "$dir/zookeeper"
		((attempt < 3)) && log "the cluster did not come up (attempt $attempt of 3): starting it again from nothing"
	done
	die "the cluster did not come up in 3 attempts"
}

# dead_nodes says which nodes of the cluster in DIR died, with their last errors.
dead_nodes() {
	local dir=$1 k pid
	for ((k = 1; k <= 4; k++)); do
		[[ -f $dir/node$k/pid ]] || continue
		pid=$(cat "$dir/node$k/pid")
		alive "$pid" && continue
		log "node$k (pid $pid) died"
		error_tail "$dir/node$k"
	done
}

# all_alive reports whether every node started in DIR still runs, saying which one does not.
all_alive() {
	local dir=$1 k
	for ((k = 1; k <= NODES; k++)); do
		if ! alive "$(cat "$dir/node$k/pid" 2>/dev/null)"; then
			log "node$k is not running"
			return 1
		fi
	done
}

# answers runs QUERY on the node at native port PORT of the cluster in DIR until it succeeds, TRIES
# times 0.5 s apart at the most, while every node runs; ANSWER holds the last answer or error.
ANSWER=""
answers() {
	local dir=$1 tries=$2 port=$3 query=$4 i
	for ((i = 0; i < tries; i++)); do
		all_alive "$dir" || return 1
		ANSWER=$("$CLIENT" --host 127.0.0.1 --port "$port" -q "$query" 2>&1) && return 0
		sleep 0.5
	done
	return 1
}

# start_cluster_once makes one attempt at start_cluster; it returns 1, having said why, when the
# cluster did not come up.
start_cluster_once() {
	local dir=$1 k node attempt rc topology
	topology=2x2
	ZK_PORT=""
	NODES=4
	if [[ ${TRUEUP_CLUSTER_NO_ZOOKEEPER:-} == 1 ]] || ! start_zookeeper "$dir"; then
		topology=2x1
		log "running without ZooKeeper: 2 shards × 1 replica, no replication, no ON CLUSTER DDL"
	fi
	[[ $topology == 2x1 ]] && NODES=2

	exec 9>>"$LOCK"
	flock -w 60 9 || die "could not take $LOCK"
	for attempt in 1 2 3 4 5; do
		pick_node_ports || { stop_zookeeper "$dir"; die "no $NODES free port triples in 19100-20299"; }
		local pids=() dirs=()
		for ((k = 0; k < NODES; k++)); do
			node=$dir/node$((k + 1))
			mkdir -p "$node"/{log,data,tmp,user_files,format_schemas}
			SHARD_OF[$node]=$((k * 2 / NODES + 1))
			REPLICA_OF[$node]=$((k % (NODES / 2) + 1))
			INTER_OF[$node]=$((NATIVE_PORTS[k] + 800))
			dirs+=("$node")
		done
		# All nodes start at once: each waits for its own server to answer.
		for ((k = 0; k < NODES; k++)); do
			launch "${dirs[k]}" "${NATIVE_PORTS[k]}" $((NATIVE_PORTS[k] + 400)) &
			pids+=($!)
		done
		rc=0
		for ((k = 0; k < NODES; k++)); do
			local r=0
			wait "${pids[k]}" || r=$?
			if ((r != 0 && rc != 1)); then rc=$r; fi
		done
		((rc == 0)) && break
		for ((k = 0; k < NODES; k++)); do stop_server "${dirs[k]}" || true; done
		if ((rc != 3)); then
			exec 9>&-
			log "a node did not start"
			return 1
		fi
		log "ports taken while starting, trying others"
		[[ $attempt == 5 ]] && { stop_zookeeper "$dir"; die "gave up after $attempt attempts to find free ports"; }
	done
	exec 9>&-

	# Every node must see the whole cluster, and its ZooKeeper session must be up, before the
	# URL is handed out.
	local seen
	for ((k = 0; k < NODES; k++)); do
		seen=$("$CLIENT" --host 127.0.0.1 --port "${NATIVE_PORTS[k]}" \
			-q "SELECT count() FROM system.clusters WHERE cluster = '$CLUSTER'" 2>&1) || true
		if [[ $seen != "$NODES" ]]; then
			log "node$((k + 1)) sees $seen nodes in cluster $CLUSTER, want $NODES"
			return 1
		fi
	done
	if [[ -n $ZK_PORT ]]; then
		for ((k = 0; k < NODES; k++)); do
			if ! answers "$dir" 40 "${NATIVE_PORTS[k]}" "SELECT count() FROM system.zookeeper WHERE path = '/'"; then
				log "node$((k + 1)) cannot read ZooKeeper on port $ZK_PORT: $ANSWER"
				return 1
			fi
		done
		# Distributed DDL must go through before the URL is handed out: a node's DDL worker
		# takes its ZooKeeper session a moment after the server answers, and the first ON
		# CLUSTER statement of a test that had just started a cluster sometimes lost its
		# connection.
		if ! answers "$dir" 60 "${NATIVE_PORTS[0]}" "CREATE DATABASE IF NOT EXISTS default ON CLUSTER $CLUSTER"; then
			log "distributed DDL on cluster $CLUSTER did not go through within 30s: $ANSWER"
			return 1
		fi
	fi

	local hosts=() p
	for p in "${NATIVE_PORTS[@]}"; do hosts+=("127.0.0.1:$p"); done
	echo "clickhouse://$(IFS=,; echo "${hosts[*]}")/default?cluster=$CLUSTER" >"$dir/url"
	echo "$topology" >"$dir/topology"
	echo "${NATIVE_PORTS[*]}" >"$dir/ports"
	echo "$ZK_PORT" >"$dir/zookeeper-port"
}

stop_cluster() {
	local dir=$1 k pids=()
	for ((k = 1; k <= 4; k++)); do
		[[ -d $dir/node$k ]] || continue
		stop_server "$dir/node$k" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || true; done
	stop_zookeeper "$dir"
}

# node_dir checks that node K of the cluster in DIR exists and prints its directory.
node_dir() {
	local dir=$1 k=$2
	[[ $k =~ ^[1-4]$ && -d $dir/node$k && -f $dir/ports ]] || die "no node $k in $dir (run start first)"
	echo "$dir/node$k"
}

# kill_node stops a node as a lost one goes: SIGKILL, no shutdown. (A clean stop also takes about
# 5 s per ReplicatedMergeTree table on 18.16.)
kill_node() {
	local node=$1 pid
	[[ -f $node/pid ]] || die "node in $node is not running"
	pid=$(cat "$node/pid")
	if alive "$pid"; then
		signal_and_wait KILL "$pid" alive 100 0.05
	fi
	rm -f "$node/pid"
}

start_node() {
	local dir k=$2 node i
	dir=$(cd "$1" && pwd -P)
	node=$(node_dir "$dir" "$k")
	if [[ -f $node/pid ]] && alive "$(cat "$node/pid")"; then die "node $k is running already"; fi
	read -r -a NATIVE_PORTS <"$dir/ports"
	ZK_PORT=$(cat "$dir/zookeeper-port" 2>/dev/null || true)
	NODES=${#NATIVE_PORTS[@]}
	i=$((k - 1))
	SHARD_OF[$node]=$((i * 2 / NODES + 1))
	REPLICA_OF[$node]=$((i % (NODES / 2) + 1))
	INTER_OF[$node]=$((NATIVE_PORTS[i] + 800))
	launch "$node" "${NATIVE_PORTS[i]}" $((NATIVE_PORTS[i] + 400)) || die "node $k did not start"
}

main_cluster() {
	[[ $# -ge 2 ]] || usage
	local cmd=$1 dir=$2
	case $cmd in
	stop-node | start-node)
		[[ $# == 3 ]] || usage
		if [[ $cmd == stop-node ]]; then kill_node "$(node_dir "$dir" "$3")"; else start_node "$dir" "$3"; fi
		return
		;;
	esac
	[[ $# == 2 ]] || usage
	case $cmd in
	start) start_cluster "$dir" ;;
	stop) stop_cluster "$dir" ;;
	env)
		[[ -f $dir/url ]] || die "no cluster URL in $dir/url (run start first)"
		echo "export TRUEUP_TEST_CLUSTER=$(cat "$dir/url")"
		;;
	*) usage ;;
	esac
}

main_cluster "$@"

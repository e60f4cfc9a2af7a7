#!/usr/bin/env bash
# Start, stop or describe a private ClickHouse server for tests.
#
#   scripts/clickhouse.sh start DIR   start a server whose files all live in DIR; print its URL
#   scripts/clickhouse.sh stop DIR    stop the server started in DIR
#   scripts/clickhouse.sh env DIR     print `export TRUEUP_TEST_CLICKHOUSE=<url>` for the server in DIR
#                                     (use: eval "$(scripts/clickhouse.sh env DIR)")
#
# The server listens on loopback only, on free ports picked from 19100-19499 (native) and
# 19500-19899 (HTTP), so it never collides with a developer's server on 19000 or with another
# test run. Config comes from scripts/clickhouse in the repository (override with
# TRUEUP_CLICKHOUSE_CONFIG=DIR).
set -euo pipefail

readonly SERVER=/usr/sbin/clickhouse-server
readonly CLIENT=/usr/bin/clickhouse-client
readonly LOCK=/tmp/trueup-clickhouse-ports.lock
readonly START_TIMEOUT=30
readonly STOP_TIMEOUT=15
readonly TOKEN_FILE=trueup-server-token

die() { echo "clickhouse.sh: $*" >&2; exit 1; }
log() { echo "clickhouse.sh: $*" >&2; }

usage() {
	echo "usage: $0 start|stop|env DIR" >&2
	exit 2
}

repo_root() {
	git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel
}

# apt_install installs Debian packages. A package's postinst may try to start a system service;
# we never want one (tests run their own servers), so when no policy-rc.d exists we add one that
# denies service starts for the duration of the install.
apt_install() {
	log "installing $*"
	local policy=/usr/sbin/policy-rc.d added=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		added=1
	fi
	local rc=0
	{
		apt-get update -q &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
	} >&2 || rc=$?
	if ((added)); then rm -f "$policy"; fi
	((rc == 0)) || die "apt-get install $* failed (exit $rc)"
}

# install_clickhouse puts Debian's clickhouse-server and clickhouse-client in place.
install_clickhouse() {
	apt_install clickhouse-server clickhouse-client
	[[ -x $SERVER ]] || die "$SERVER still missing after install"
}

port_in_use() {
	local p=$1
	if command -v ss >/dev/null; then
		[[ -n $(ss -Hltn "sport = :$p" 2>/dev/null) ]]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
	fi
}

# pick_ports prints "NATIVE HTTP": a free native port in 19100-19499 and a free HTTP port 400 above
# it. The start offset is random so concurrent runs rarely try the same pair; the lock makes sure
# two of our own starts never race for one.
pick_ports() {
	local n=400 start=$((RANDOM % 400)) i p
	for ((i = 0; i < n; i++)); do
		p=$((19100 + (start + i) % n))
		if ! port_in_use "$p" && ! port_in_use $((p + 400)); then
			echo "$p $((p + 400))"
			return 0
		fi
	done
	return 1
}

# alive reports whether the pid in DIR/pid is a running clickhouse-server.
alive() {
	local pid=$1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		grep -q clickhouse "/proc/$pid/cmdline" 2>/dev/null
}

# signal_and_wait sends signal SIG to PID, then waits while CHECK PID says it lives, TRIES times
# STEP seconds at the most.
signal_and_wait() {
	local sig=$1 pid=$2 check=$3 tries=$4 step=$5 i
	kill "-$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < tries; i++)); do
		"$check" "$pid" || break
		sleep "$step"
	done
}

write_config() {
	local dir=$1 native=$2 http=$3 src
	src=${TRUEUP_CLICKHOUSE_CONFIG:-"$(repo_root)/scripts/clickhouse"}
	[[ -f $src/config.xml && -f $src/users.xml ]] || die "no config.xml/users.xml in $src"
	# DIR goes into a sed replacement: escape the characters sed treats specially there.
	local esc=${dir//\\/\\\\}
	esc=${esc//&/\\&}
	esc=${esc//|/\\|}
	sed -e "s|@DIR@|$esc|g" \
		-e "s|<tcp_port>[0-9]*</tcp_port>|<tcp_port>$native</tcp_port>|" \
		-e "s|<http_port>[0-9]*</http_port>|<http_port>$http</http_port>|" \
		"$src/config.xml" >"$dir/config.xml"
	cp "$src/users.xml" "$dir/users.xml"
	if [[ -f $src/dictionaries.xml ]]; then
		sed -e "s|@PORT@|$native|g" "$src/dictionaries.xml" >"$dir/dictionaries.xml"
	fi
	# A script that sources this one (clickhouse-cluster.sh) adds per-node config here.
	if declare -F node_config >/dev/null; then node_config "$dir" "$native" "$http"; fi
	grep -q "<tcp_port>$native</tcp_port>" "$dir/config.xml" || die "could not set tcp_port in $dir/config.xml"
	grep -q "<http_port>$http</http_port>" "$dir/config.xml" || die "could not set http_port in $dir/config.xml"
}

error_tail() {
	local dir=$1 f
	for f in "$dir/log/error.log" "$dir/log/stderr.log"; do
		if [[ -s $f ]]; then
			echo "--- tail of $f" >&2
			tail -n 30 "$f" >&2
		fi
	done
}

# launch starts the server in DIR and waits until it answers. Returns 3 when the ports were taken
# by someone else between the check and the bind, so the caller can try other ports.
launch() {
	local dir=$1 native=$2 http=$3 pid i out token
	write_config "$dir" "$native" "$http"
	token="$$-$RANDOM$RANDOM-$(date +%s%N)"
	echo "$token" >"$dir/user_files/$TOKEN_FILE"
	# Fresh logs per attempt, so "address already in use" below is about this attempt.
	rm -f "$dir"/log/*.log
	# setsid: the server must not die with the shell that started it (make, a CI step), nor get
	# its terminal's Ctrl-C before `stop` runs.
	# fd 9 holds the port lock: the server must not inherit it.
	(exec 9>&- && cd "$dir" && exec setsid "$SERVER" --config-file="$dir/config.xml" \
		</dev/null >>"$dir/log/stderr.log" 2>&1) &
	pid=$!
	echo "$pid" >"$dir/pid"
	for ((i = 0; i < START_TIMEOUT * 5; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			rm -f "$dir/pid"
			if grep -qsi 'address already in use' "$dir/log/error.log" "$dir/log/stderr.log"; then
				return 3
			fi
			log "server exited during startup"
			error_tail "$dir"
			return 1
		fi
		# Ask for the token only our server can read: while ours is still failing to bind a port
		# someone else took, that someone else may be answering on it.
		if out=$("$CLIENT" --host 127.0.0.1 --port "$native" \
			-q "SELECT s FROM file('$TOKEN_FILE', 'TSV', 's String')" 2>&1); then
			[[ $out == "$token" ]] && return 0
			out="port $native is answered by another server"
		fi
		sleep 0.2
	done
	log "server did not answer on port $native within ${START_TIMEOUT}s: $out"
	error_tail "$dir"
	stop_server "$dir" || true
	return 1
}

start() {
	local dir=$1
	[[ -x $SERVER ]] || install_clickhouse
	[[ -x $CLIENT ]] || install_clickhouse
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	if [[ -f $dir/pid ]] && alive "$(cat "$dir/pid")"; then
		die "a server is already running from $dir (pid $(cat "$dir/pid"))"
	fi
	mkdir -p "$dir"/{log,data,tmp,user_files,format_schemas}

	local attempt native http rc
	exec 9>>"$LOCK"
	flock -w 60 9 || die "could not take $LOCK"
	for attempt in 1 2 3 4 5; do
		read -r native http < <(pick_ports) || die "no free ports in 19100-19899"
		rc=0
		launch "$dir" "$native" "$http" || rc=$?
		case $rc in
		0) break ;;
		3) log "ports $native/$http taken while starting, trying others" ;;
		*) exit 1 ;;
		esac
		[[ $attempt == 5 ]] && die "gave up after $attempt attempts to find free ports"
	done
	exec 9>&-

	local url="clickhouse://127.0.0.1:$native/default"
	echo "$url" >"$dir/url"
	echo "$url"
}

stop_server() {
	local dir=$1 pid
	[[ -f $dir/pid ]] || { log "no pid file in $dir: nothing to stop"; return 0; }
	pid=$(cat "$dir/pid")
	if ! alive "$pid"; then
		log "server pid $pid from $dir is not running"
		rm -f "$dir/pid"
		return 0
	fi
	signal_and_wait TERM "$pid" alive $((STOP_TIMEOUT * 10)) 0.1
	if alive "$pid"; then
		log "server pid $pid still running after ${STOP_TIMEOUT}s: SIGKILL"
		signal_and_wait KILL "$pid" alive 50 0.1
	fi
	rm -f "$dir/pid"
}

main() {
	[[ $# == 2 ]] || usage
	local cmd=$1 dir=$2
	case $cmd in
	start) start "$dir" ;;
	stop) stop_server "$dir" ;;
	env)
		[[ -f $dir/url ]] || die "no server URL in $dir/url (run start first)"
		echo "export TRUEUP_TEST_CLICKHOUSE=$(cat "$dir/url")"
		;;
	*) usage ;;
	esac
}

# Sourced (by clickhouse-cluster.sh) it only defines the functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi

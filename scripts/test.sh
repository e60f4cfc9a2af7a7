#!/usr/bin/env bash
# Run a command with a private ClickHouse server, stopping the server however the command ends.
#
#   scripts/test.sh test    go test -count=1 -timeout 20m $TESTFLAGS ${PKGS:-./...}
#   scripts/test.sh bench   go run ./cmd/trueup-bench $BENCHFLAGS
#
# The server's URL is exported as TRUEUP_TEST_CLICKHOUSE. For test, a local cluster (2 shards × 2
# replicas, scripts/clickhouse-cluster.sh; about 4 s to start) runs beside it, its URL exported as
# TRUEUP_TEST_CLUSTER (a test that kills a node starts a cluster of its own); set NO_CLUSTER=1 to go
# without (the cluster tests then skip, or fail under CI=true). GOFLAGS is read by go itself.
# The exit status is the command's. Set KEEP_CLICKHOUSE=1 to keep the servers' directories
# (logs) after the run.
set -euo pipefail

cd "$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"

began=$SECONDS
chdir=$(mktemp -d "${TMPDIR:-/tmp}/trueup-clickhouse.XXXXXX")
cldir=""
cleanup() {
	local rc=$?
	scripts/clickhouse.sh stop "$chdir" || true
	if [[ -n $cldir ]]; then scripts/clickhouse-cluster.sh stop "$cldir" || true; fi
	if [[ ${KEEP_CLICKHOUSE:-} == 1 ]]; then
		echo "test.sh: ClickHouse files kept in $chdir $cldir" >&2
	else
		rm -rf "$chdir" ${cldir:+"$cldir"}
	fi
	echo "test.sh: $mode finished in $((SECONDS - began))s (exit $rc)" >&2
	exit "$rc"
}
mode=${1:-test}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

TRUEUP_TEST_CLICKHOUSE=$(scripts/clickhouse.sh start "$chdir")
export TRUEUP_TEST_CLICKHOUSE
echo "test.sh: ClickHouse at $TRUEUP_TEST_CLICKHOUSE (files in $chdir)" >&2
# Not for bench: four idle servers would share the two cores with what it measures.
if [[ $mode == test && ${NO_CLUSTER:-} != 1 ]]; then
	cldir=$(mktemp -d "${TMPDIR:-/tmp}/trueup-cluster.XXXXXX")
	scripts/clickhouse-cluster.sh start "$cldir" >/dev/null
	eval "$(scripts/clickhouse-cluster.sh env "$cldir")"
	export TRUEUP_TEST_CLUSTER
	echo "test.sh: ClickHouse cluster at $TRUEUP_TEST_CLUSTER (files in $cldir)" >&2
fi

# Word splitting of the flag variables is intended: they hold several flags.
# shellcheck disable=SC2086
case $mode in
test) go test -count=1 -timeout 20m ${TESTFLAGS:-} ${PKGS:-./...} ;;
bench) go run ./cmd/trueup-bench ${BENCHFLAGS:-} ;;
*)
	echo "usage: $0 test|bench" >&2
	exit 2
	;;
esac

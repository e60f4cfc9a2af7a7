#!/usr/bin/env bash
# Make sure Debian's chromium and chromium-driver are installed, for browser tests.
# Idempotent: when both are present it does nothing and returns at once.
set -euo pipefail

readonly CHROMIUM=/usr/bin/chromium
readonly DRIVER=/usr/bin/chromedriver

if [[ -x $CHROMIUM && -x $DRIVER ]]; then
	exit 0
fi

echo "chromium.sh: installing chromium and chromium-driver" >&2
if [[ $(id -u) != 0 ]]; then
	echo "chromium.sh: must run as root to install (or install chromium chromium-driver yourself)" >&2
	exit 1
fi
{
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-liberation
} >&2
[[ -x $CHROMIUM ]] || { echo "chromium.sh: $CHROMIUM missing after install" >&2; exit 1; }
"$CHROMIUM" --version >&2 || true

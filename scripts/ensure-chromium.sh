#!/usr/bin/env bash
# Installs Debian's chromium for the admin UI's browser test
# (httpapi/browser_test.go), unless /usr/bin/chromium is already there.
# Idempotent: a second run does nothing. Uses sudo only when not root.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "ensure-chromium: /usr/bin/chromium is missing and this user is not root and has no sudo;" >&2
		echo "ensure-chromium: run as root: apt-get update && apt-get install -y chromium" >&2
		exit 1
	fi
	sudo="sudo"
fi

echo "ensure-chromium: installing chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

if [ ! -x /usr/bin/chromium ]; then
	echo "ensure-chromium: apt-get installed chromium but /usr/bin/chromium is not there" >&2
	exit 1
fi

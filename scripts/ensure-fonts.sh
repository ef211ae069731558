#!/usr/bin/env bash
# Installs Debian's Korean fonts (fonts-nanum) for the request page's screenshots
# in Korean (make screenshot), unless they are there. The browser tests do not
# need them: they read the page's text, not its pixels. Uses sudo only when not root.
set -euo pipefail

if fc-list 2>/dev/null | grep -qi nanum; then
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
echo "ensure-fonts: installing fonts-nanum with apt-get" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-nanum

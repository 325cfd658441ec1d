#!/usr/bin/env bash
# Builds the lab's binaries from Go modules, or finds them already built in the cache.
#
#   lab/build.sh COMPONENT...        prints "COMPONENT=<dir>" for each, the folder holding its binaries
#   lab/build.sh --key COMPONENT...  prints "COMPONENT=<key>" for each, its cache key, and builds nothing
#   lab/build.sh --download COMPONENT...
#                                    downloads the modules of those not built yet, and builds nothing
#                                    (make demo runs it beside the tool's own build)
#
# Components: etcd, kubernetes (kube-apiserver + kube-controller-manager), argocd-v3.6.1, argocd-v3.5.1,
# argocd-v2.14.11 (CI's lines), argocd-v3.4.7, argocd-v3.3.14, argocd-v3.2.11, argocd-v3.1.16,
# argocd-v3.0.23 (built only for `make test-matrix`), and the helm and kustomize each Argo CD
# release's repo-server runs with (lab/modules/argocd-*/repo-server-tools names them): helm-v4.3.1,
# helm-v4.2.1, helm-v3.19.4, helm-v3.18.4, helm-v3.17.1, helm-v3.16.3, kustomize-v5.8.2,
# kustomize-v5.8.1, kustomize-v5.7.0, kustomize-v5.6.0, kustomize-v5.4.3. Each has its module in
# lab/modules/COMPONENT.
#
# Argo CD v3.3.14, v3.4.7 and v3.5.1 build their in-tree gitops-engine, which the argo-cd/v3 module
# zip leaves out, from ../shared/third_party/argo-cd-gitops-engine beside the repository root (their
# go.mod's replace); without that folder they refuse to build, saying so.
#
# And argocd-ui-v2.14.11, argocd-ui-v3.5.1, argocd-ui-v3.6.1: that release as its image builds it,
# its own UI (built with node from the module's ui/ and argo-ui from ../shared/third_party) embedded,
# for UI=1; each builds from lab/modules/argocd-VERSION, whose argo-ui file names the argo-ui commit
# (v3.6.1's: a stand-in for the pin the folder lacks).
#
# The cache lives outside the work tree (UNPRUNE_LAB_CACHE, default ~/.cache/unprune/lab) so a fresh
# clone, a later session or CI reuses it. Each entry is keyed by the component's go.mod, go.sum, the
# build flags, the Go toolchain and the content of any local directory its go.mod replaces a module
# with: change any of them and the binary is rebuilt, never reused stale.
set -euo pipefail

# Every recipe sets CGO_ENABLED itself, whatever the caller exports: the cache key covers a recipe's
# text, not the environment.
unset CGO_ENABLED
# The compiler and the linker collect garbage a quarter as often as by default: a cold build is CPU
# bound, and spends about a tenth less CPU so (the Makefile's build measured 168 s of user time
# against 196 s, same binaries to the byte). Memory is plentiful beside it: a few GB at most.
export GOGC=400

here=$(cd "$(dirname "$0")" && pwd)
cache=${UNPRUNE_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/unprune/lab}
kube_version=v1.35.4
# The machine's own toolchain choice, before any component overrides it for its build.
base_toolchain=${GOTOOLCHAIN:-local}

log() { printf 'lab/build: %s\n' "$*" >&2; }

# toolchain prints the GOTOOLCHAIN a module needs: its go.mod may ask for a newer Go than the machine's.
# Only Argo CD v3.6.1 does (go 1.27.0); v3.5.1 declares go 1.26.3, v3.4.7 go 1.26.0, v3.3.14 go
# 1.25.5, v3.0.23 go 1.24.6 and v2.14.11 go 1.23 (none a toolchain line), which the machine's Go 1.26
# builds (1.26.3 or later, for v3.5.1).
toolchain() {
	case ${1/#argocd-ui-/argocd-} in
	argocd-v3.6.1) echo go1.27.3 ;;
	*) echo "$base_toolchain" ;;
	esac
}

ldflags() {
	case $1 in
	kubernetes)
		local major=${kube_version#v}; major=${major%%.*}
		local minor=${kube_version#v*.}; minor=${minor%%.*}
		local f=""
		for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			f+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
			f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
		done
		# A release build strips the symbol table and DWARF (golang.sh: "-s -w" unless DBG=1).
		echo "$f -s -w"
		;;
	argocd-ui-v*) ldflags "argocd-${1#argocd-ui-}" ;;
	argocd-v*)
		local v=${1#argocd-v}
		echo "-X github.com/argoproj/argo-cd/v${v%%.*}/common.version=$v"
		;;
	helm-v*)
		# What helm's Makefile stamps on a release: the version (else `helm version` says only "v3.16")
		# and, in v3, the Kubernetes version its capabilities default to, 1.<client-go's minor>
		# (client-go v0.31.1: 1.31; Argo CD passes --kube-version anyway). Not the git commit: a
		# module zip does not carry it.
		local v=${1#helm-} major=${1#helm-v}
		major=${major%%.*}
		local pkg=helm.sh/helm/v$major
		local f="-X $pkg/internal/version.version=$v -X $pkg/internal/version.gitTreeState=clean"
		if [ "$major" = 3 ]; then
			local cg
			cg=$(awk '$1 == "k8s.io/client-go" { print $2 }' "$here/modules/$1/go.mod")
			cg=${cg#v0.}
			for p in pkg/lint/rules pkg/chartutil; do
				f+=" -X $pkg/$p.k8sVersionMajor=1 -X $pkg/$p.k8sVersionMinor=${cg%%.*}"
			done
		fi
		echo "$f"
		;;
	kustomize-v*)
		# The release tag, as kustomize's release build stamps it: `kustomize version` prints
		# v5.6.0, and Argo CD parses `kustomize version --short` ("{kustomize/v5.6.0  …}") to pick
		# flags by version (util/kustomize/kustomize.go, getSemver). Unstamped it says "(devel)".
		echo "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/${1#kustomize-}"
		;;
	esac
}

# module prints the folder in lab/modules a component builds from: its own, but argocd-ui-VERSION
# builds from argocd-VERSION's.
module() {
	echo "$here/modules/${1/#argocd-ui-/argocd-}"
}

key() {
	local comp=$1 mod
	mod=$(module "$1")
	{
		cat "$mod/go.mod" "$mod/go.sum"
		ldflags "$comp"
		GOTOOLCHAIN=$(toolchain "$comp") go env GOVERSION
		# The component's recipe is part of the key: a change to it must not reuse an old binary.
		sed -n "/^recipe_${comp//[-.]/_}()/,/^}/p" "$0"
		case $comp in
		argocd-*) sed -n '/^recipe_argocd()/,/^}/p' "$0" ;;
		helm-*) sed -n '/^recipe_helm()/,/^}/p' "$0" ;;
		kustomize-*) sed -n '/^recipe_kustomize()/,/^}/p' "$0" ;;
		esac
		case $comp in
		argocd-ui-*)
			# What the UI is built from and with: the argo-ui folder's files, node, the recipe's helper.
			sed -n '/^recipe_argocd_ui()/,/^}/p;/^ui_app()/,/^}/p' "$0"
			cat "$mod/argo-ui" "$here/argocd-ui.mjs"
			local argo_ui
			argo_ui=$(argo_ui_dir "$comp") && (cd "$argo_ui" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
			node --version
			;;
		esac
		# go.sum vouches for nothing a replace takes from a local directory: its files are the key.
		# (Nothing is printed for a module without one, so their keys stay what they were.)
		local dir
		for dir in $(local_replacements "$comp"); do
			echo "local replacement $dir"
			(cd "$mod/$dir" && find . \( -type f -o -type l \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		done
	} | sha256sum | cut -c1-16
}

# local_replacements prints the local directories (relative to the module) that COMPONENT's go.mod
# replaces a module with: Argo CD v3.3+'s in-tree gitops-engine, from ../shared/third_party.
local_replacements() {
	local mod
	mod=$(module "$1")
	[ -f "$mod/go.mod" ] || return 0 # build_one names unknown components
	awk '$1 !~ /^\/\// { for (i = 1; i < NF; i++) if ($i == "=>" && $(i + 1) ~ /^\.\.?\//) print $(i + 1) }' "$mod/go.mod"
}

# require_local_replacements refuses a component whose local replacement is missing, before anything
# is built: a checkout without ../shared/third_party cannot build Argo CD v3.3–v3.5 faithfully, and
# the proxy's gitops-engine is not theirs.
require_local_replacements() {
	local comp=$1 dir mod
	mod=$(module "$1")
	for dir in $(local_replacements "$comp"); do
		if [ ! -d "$mod/$dir" ]; then
			log "cannot build $comp: $(realpath -m "$mod/$dir") does not exist."
			log "lab/${mod#"$here"/}/go.mod takes Argo CD's in-tree gitops-engine from there (the argo-cd/v3 module zip leaves it out): put the shared third_party folder beside this checkout, as ../shared/third_party from the repository root (lab/README.md)."
			return 1
		fi
	done
}

# One recipe per component: build into $1 with the go build flags that follow.
# Each component builds as its release does: cgo off, since etcd's scripts/build_lib.sh, Kubernetes'
# hack/lib/golang.sh (KUBE_STATIC_BINARIES), Argo CD's Makefile (CGO_FLAG) and helm's and kustomize's
# release builds all turn it off. A cold build then compiles the standard library once for all of
# them (but Argo CD v3.6.1, whose Go is newer) and this repository's own build. Their k8s.io packages
# it compiles again: Kubernetes' notest tag leaves a file out of apimachinery, and client-go's
# golang.org/x/term is older there than here.
recipe_etcd() {
	local out=$1; shift
	CGO_ENABLED=0 go build "$@" -o "$out/etcd" go.etcd.io/etcd/server/v3
}

recipe_kubernetes() {
	local out=$1; shift
	# With the tags a release build has (hack/lib/golang.sh, kube::golang::build_binaries: selinux,
	# notest, and grpcnotrace when not debugging). kubectl of the same release: tests and the demo use
	# it, free of version-skew warnings. One go build, so that each binary links while the next compiles.
	CGO_ENABLED=0 go build "$@" -tags selinux,notest,grpcnotrace -o "$out/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
}

recipe_argocd() {
	local out=$1 major=$2; shift 2
	local pkg=github.com/argoproj/argo-cd/v$major
	CGO_ENABLED=0 go build "$@" -o "$out/argocd" "$pkg/cmd"
	# The CRDs, the controller's ClusterRole (the lab runs the controller with its rights) and the
	# repo-server's git wrapper ship in the module, not in the binary. Copying them is cheap, yet it
	# changes this recipe and so the cache key: the go build above then finds every package in Go's
	# build cache (GOCACHE, left alone here) and only links.
	local src
	src=$(go list -m -f '{{.Dir}}' "$pkg")
	mkdir -p "$out/crds" "$out/cluster-rbac/application-controller"
	cp "$src"/manifests/crds/*-crd.yaml "$out/crds/"
	cp "$src"/manifests/cluster-rbac/application-controller/*.yaml "$out/cluster-rbac/application-controller/"
	for f in git-verify-wrapper.sh git-ask-pass.sh; do
		if [ -f "$src/hack/$f" ]; then install -m 0755 "$src/hack/$f" "$out/$f"; fi
	done
	chmod -R u+w "$out"
}

recipe_argocd_v3_6_1() { local out=$1; shift; recipe_argocd "$out" 3 "$@"; }
recipe_argocd_v3_0_23() { local out=$1; shift; recipe_argocd "$out" 3 "$@"; }
recipe_argocd_v2_14_11() { local out=$1; shift; recipe_argocd "$out" 2 "$@"; }

# prune_stale removes other builds of a component that no run has used for 14 days: each key change
# leaves the previous binaries behind (up to ~370 MB a component), and other checkouts may still
# use recent ones.
prune_stale() {
	local comp=$1 keep=$2 dir
	for dir in "$cache/$comp"-*; do
		[ -d "$dir" ] && [ "$dir" != "$keep" ] || continue
		case $dir in *.tmp.*) continue ;; esac
		if [ -z "$(find "$dir/.complete" -mtime -14 2>/dev/null)" ]; then
			log "removing $dir, unused for 14 days"
			rm -rf "$dir"
		fi
	done
}

# helm and kustomize, which Argo CD's image carries for its repo-server: one component per version,
# the versions each release pins in hack/tool-versions.sh. Built with cgo off, as the release binaries
# that image installs are.
recipe_helm() {
	local out=$1 major=$2; shift 2
	CGO_ENABLED=0 go build "$@" -o "$out/helm" "helm.sh/helm/v$major/cmd/helm"
}

recipe_kustomize() {
	local out=$1; shift
	CGO_ENABLED=0 go build "$@" -o "$out/kustomize" sigs.k8s.io/kustomize/kustomize/v5
}

# One function a version, each closing on a line of its own: key() takes a recipe up to the first line
# that starts with "}", so a one-line function would carry whatever follows it into the key.
recipe_helm_v4_3_1() {
	recipe_helm "$1" 4 "${@:2}"
}
recipe_helm_v3_18_4() {
	recipe_helm "$1" 3 "${@:2}"
}
recipe_helm_v3_17_1() {
	recipe_helm "$1" 3 "${@:2}"
}
recipe_helm_v3_16_3() {
	recipe_helm "$1" 3 "${@:2}"
}
recipe_kustomize_v5_8_2() {
	recipe_kustomize "$@"
}
recipe_kustomize_v5_7_0() {
	recipe_kustomize "$@"
}
recipe_kustomize_v5_6_0() {
	recipe_kustomize "$@"
}
recipe_kustomize_v5_4_3() {
	recipe_kustomize "$@"
}
# The matrix's lines, each closing on a line of its own, below the one-line recipes of v3.6.1,
# v3.0.23 and v2.14.11 (CI's lines when they were written): those take everything up to
# prune_stale's closing brace into their keys, which must not change.
recipe_argocd_v3_1_16() {
	recipe_argocd "$1" 3 "${@:2}"
}
recipe_argocd_v3_2_11() {
	recipe_argocd "$1" 3 "${@:2}"
}
recipe_argocd_v3_3_14() {
	recipe_argocd "$1" 3 "${@:2}"
}
recipe_argocd_v3_4_7() {
	recipe_argocd "$1" 3 "${@:2}"
}
recipe_argocd_v3_5_1() {
	recipe_argocd "$1" 3 "${@:2}"
}
recipe_helm_v4_2_1() {
	recipe_helm "$1" 4 "${@:2}"
}
recipe_helm_v3_19_4() {
	recipe_helm "$1" 3 "${@:2}"
}
recipe_kustomize_v5_8_1() {
	recipe_kustomize "$@"
}

build_one() {
	local comp=$1 mod
	mod=$(module "$1")
	if [ ! -f "$mod/go.mod" ] || ! declare -F "recipe_${comp//[-.]/_}" >/dev/null; then
		echo "lab/build: unknown component $comp (known: $(cd "$here/modules" && echo *))" >&2
		exit 2
	fi
	case $comp in argocd-ui-*) argo_ui_dir "$comp" >/dev/null || exit 2 ;; esac
	local out=$cache/$comp-$(key "$comp")
	if [ -f "$out/.complete" ]; then
		touch "$out/.complete" # last use, for prune_stale
		echo "$comp=$out"
		return
	fi
	local tmp=$out.tmp.$$
	rm -rf "$tmp" && mkdir -p "$tmp"
	log "building $comp into $out (first time only; see lab/README.md for times)"
	local start=$SECONDS
	local flags=(-trimpath -ldflags "$(ldflags "$comp")")
	(
		export GOTOOLCHAIN
		GOTOOLCHAIN=$(toolchain "$comp")
		cd "$mod"
		go mod download
		"recipe_${comp//[-.]/_}" "$tmp" "${flags[@]}"
	)
	touch "$tmp/.complete"
	rm -rf "$out" && mv "$tmp" "$out"
	prune_stale "$comp" "$out"
	log "built $comp in $((SECONDS - start))s"
	echo "$comp=$out"
}

# ui_app builds COMP's UI from the module's ui/ (SRC) into OUT/app: what the release's Dockerfile's
# argocd-ui stage does (see recipe_argocd_ui).
ui_app() {
	local comp=$1 src=$2 out=$3 argo_ui work pm install
	argo_ui=$(argo_ui_dir "$comp")
	work=$out/ui-build
	mkdir -p "$work"
	cp -R "$src/ui/." "$work/"
	chmod -R u+w "$work"
	node "$here/argocd-ui.mjs" pin "$work" "$(argo_ui_pin "$comp")" "$argo_ui"
	if [ -f "$work/pnpm-lock.yaml" ]; then
		# The Dockerfile's --frozen-lockfile cannot hold: argo-ui's entry changes.
		pm=$(cd "$work" && node -p 'require("./package.json").packageManager')
		install=(install --no-frozen-lockfile --config.confirmModulesPurge=false)
	else
		pm=yarn@1.22.22
		install=(install --non-interactive --network-timeout 200000)
	fi
	local t=$SECONDS
	(cd "$work" && npx --yes "$pm" "${install[@]}" >&2)
	log "$comp: $pm install in $((SECONDS - t))s"
	node "$here/argocd-ui.mjs" check "$work" "$argo_ui"
	t=$SECONDS
	(cd "$work" && HOST_ARCH=amd64 NODE_ENV=production NODE_ONLINE_ENV=online NODE_OPTIONS=--max_old_space_size=8192 \
		npx --yes "$pm" build >&2)
	log "$comp: $pm build in $((SECONDS - t))s"
	mv "$work/dist/app" "$out/app"
	rm -rf "$work"
}

# ui_stage prints the folder where the UI lane (below) leaves COMP's UI for this run's
# recipe_argocd_ui; prune_stale leaves *.tmp.* alone.
ui_stage() {
	echo "$cache/$1.tmp.$$.ui"
}

# Argo CD's UI as the release's Dockerfile builds it (stage argocd-ui: the install, then
# `NODE_ENV=production yarn build` or `pnpm build`; yarn 1.22.22 as v2.14's package.json asks, pnpm as
# v3.5+'s packageManager names) from ui/ of the module, with one change: package.json's argo-ui, a git
# commit no registry serves, points at a commit's folder in ../shared/third_party/argo-ui
# (argocd-ui.mjs checks the release's pin first, and after the install that every other package is
# the lockfile's). Then the argocd binary with the UI embedded, as the Dockerfile's argocd-build stage
# does by copying dist/app into ui/ before `go build`: argocd-server serves index.html only from the
# embedded files (server/server.go, getIndexData), never from --staticassets.
recipe_argocd_ui() {
	local out=$1 major=$2 comp=$3; shift 3
	local pkg=github.com/argoproj/argo-cd/v$major src stage
	src=$(go list -m -f '{{.Dir}}' "$pkg")
	# The UI may have been built already, beside the Go builds (the UI lane below): take it, or build it here.
	stage=$(ui_stage "$comp")
	while [ -n "${ui_lane_pid:-}" ] && [ ! -e "$stage/.done" ] && kill -0 "$ui_lane_pid" 2>/dev/null; do
		sleep 2
	done
	if [ -e "$stage/.done" ]; then
		mv "$stage/app" "$out/app"
	else
		ui_app "$comp" "$src" "$out"
	fi
	rm -rf "$stage"
	# go build lets nothing replace a file beneath GOMODCACHE (not even -overlay), so the release
	# builds from a copy of its module with the UI where the Dockerfile puts it before `go build`,
	# named by a replace in a copy of the lab module's go.mod (-modfile; its go.sum beside it):
	# lab/modules stays as it is, and every other module is the one go.sum vouches for.
	local tree=$out/argo-cd
	cp -R "$src/." "$tree"
	chmod -R u+w "$tree"
	rm -rf "$tree/ui/dist/app"
	cp -R "$out/app" "$tree/ui/dist/app"
	cp go.mod "$out/ui.mod"
	cp go.sum "$out/ui.sum"
	go mod edit -modfile="$out/ui.mod" -replace "$pkg=$tree"
	local t=$SECONDS
	recipe_argocd "$out" "$major" "$@" -modfile="$out/ui.mod"
	rm -rf "$tree" "$out/ui.mod" "$out/ui.sum"
	log "$comp: go build with the UI embedded in $((SECONDS - t))s"
}

# argo_ui_commits prints lab/modules/argocd-VERSION/argo-ui without comments: the argo-ui commit the
# UI is built with, then, where that is not the release's own pin, "instead-of <the pin>".
argo_ui_commits() {
	sed 's/#.*//' "$(module "$1")/argo-ui" | awk 'NF'
}

# argo_ui_pin prints the commit the release pins.
argo_ui_pin() {
	local lines
	lines=$(argo_ui_commits "$1")
	if grep -q '^instead-of ' <<<"$lines"; then
		awk '$1 == "instead-of" { print $2 }' <<<"$lines"
	else
		head -1 <<<"$lines" | tr -d '[:space:]'
	fi
}

# argo_ui_dir prints the shared argo-ui folder a UI component builds with.
argo_ui_dir() {
	local commit
	commit=$(argo_ui_commits "$1" | head -1 | tr -d '[:space:]')
	local dir=${UNPRUNE_THIRD_PARTY:-$(cd "$here/../.." && pwd)/shared/third_party}/argo-ui/$commit
	if [ ! -f "$dir/package.json" ]; then
		echo "lab/build: $1 needs argo-ui $commit in $dir (see ../shared/third_party/README.md)" >&2
		return 1
	fi
	echo "$dir"
}

recipe_argocd_ui_v2_14_11() {
	recipe_argocd_ui "$1" 2 argocd-ui-v2.14.11 "${@:2}"
}
recipe_argocd_ui_v3_5_1() {
	recipe_argocd_ui "$1" 3 argocd-ui-v3.5.1 "${@:2}"
}
recipe_argocd_ui_v3_6_1() {
	recipe_argocd_ui "$1" 3 argocd-ui-v3.6.1 "${@:2}"
}

[ $# -gt 0 ] || set -- etcd kubernetes argocd-v3.6.1 argocd-v3.5.1 argocd-v2.14.11 \
	helm-v4.3.1 helm-v4.2.1 helm-v3.16.3 kustomize-v5.8.2 kustomize-v5.8.1 kustomize-v5.4.3
for c in "$@"; do
	require_local_replacements "$c" || exit 2
done
download_only=0
if [ "${1:-}" = --download ]; then
	download_only=1
	shift
fi
# lab/build.sh --key COMPONENT... prints each one's cache key and builds nothing (lab/tools_test.go).
if [ "${1:-}" = --key ]; then
	shift
	for c in "$@"; do
		echo "$c=$(key "$c")"
	done
	exit 0
fi
mkdir -p "$cache"

# What a cold run builds overlaps where it can, on a machine of two cores: the modules of every
# component still to build download at once (network, while the first builds compile), and the UIs'
# node builds (yarn or pnpm, webpack: mostly one core) run beside the Go builds, in a lane of their
# own. The Go builds stay one after another: each already uses every core, and two releases
# compiling the same packages at once would each compile them (Go's build cache shares only what is
# finished).
todo=()
for c in "$@"; do
	[ -f "$cache/$c-$(key "$c")/.complete" ] || todo+=("$c")
done
background=()
# On a failed build, what this run started in the background stops with it, by PID, children first.
stop_tree() {
	local child
	for child in $(pgrep -P "$1" 2>/dev/null); do
		stop_tree "$child"
	done
	kill -TERM "$1" 2>/dev/null || true
}
stop_background() {
	local pid
	for pid in "${background[@]}"; do
		stop_tree "$pid"
	done
	rm -rf "$cache"/*.tmp.$$.ui "$cache"/*.tmp.$$.ui.log
}
trap stop_background EXIT
# download_modules starts downloading the modules of each component given, in the background.
download_modules() {
	declare -A fetched=()
	local c mod
	for c in "$@"; do
		mod=$(module "$c")
		[ -z "${fetched[$mod]:-}" ] || continue
		fetched[$mod]=1
		(cd "$mod" && GOTOOLCHAIN=$(toolchain "$c") go mod download) >/dev/null 2>&1 &
		background+=($!)
	done
}
if [ "$download_only" = 1 ]; then
	# What fails to download here fails again, and says why, when the component builds.
	[ ${#todo[@]} -eq 0 ] || download_modules "${todo[@]}"
	wait
	exit 0
fi
if [ ${#todo[@]} -gt 0 ]; then
	download_modules "${todo[@]}"
	uis=()
	for c in "${todo[@]}"; do
		case $c in argocd-ui-*) uis+=("$c") ;; esac
	done
	if [ ${#uis[@]} -gt 0 ]; then
		(
			for c in "${uis[@]}"; do
				stage=$(ui_stage "$c")
				rm -rf "$stage" && mkdir -p "$stage"
				major=${c#argocd-ui-v}
				major=${major%%.*}
				# A statement of its own, not a condition, so that set -e holds inside ui_app.
				set +e
				(
					set -e
					# go list -m names a module's folder only once it is downloaded.
					src=$(cd "$(module "$c")" && GOTOOLCHAIN=$(toolchain "$c") go mod download -json "github.com/argoproj/argo-cd/v$major" |
						node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => console.log(JSON.parse(s).Dir))')
					ui_app "$c" "$src" "$stage"
				) 2>"$stage.log"
				status=$?
				set -e
				if [ "$status" -eq 0 ] && [ -d "$stage/app" ]; then
					touch "$stage/.done"
					grep '^lab/build: ' "$stage.log" >&2 || true
				else
					log "$c: its UI did not build beside the Go builds (its last lines follow); it builds again in turn"
					tail -n 20 "$stage.log" >&2
				fi
				rm -f "$stage.log"
			done
		) &
		ui_lane_pid=$!
		background+=("$ui_lane_pid")
	fi
fi
for c in "$@"; do
	build_one "$c"
done
wait

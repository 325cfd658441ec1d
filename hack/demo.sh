#!/usr/bin/env bash
# The incident, reproduced in the lab and resolved with unprune (README: `make demo`).
#
# A team commits the kube-system Namespace into an Application's path; Argo CD syncs it; the commit is
# reverted. The app is now stuck OutOfSync with kube-system "requiring pruning". unprune finds it,
# previews the fix, applies it, and shows the app Synced with kube-system untouched.
#
# Environment: ARGOCD_VERSION (v3.6.1), TRACKING (annotation+label), KEEP_LAB=1 to leave the lab running.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

export ARGOCD_VERSION=${ARGOCD_VERSION:-v3.6.1}
export TRACKING=${TRACKING:-annotation+label}
export LAB_DIR=$root/.lab/demo
export KCM=on APP_NAMESPACES="" INSTANCE_LABEL_KEY="" INSTALLATION_ID=""

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

# A fresh lab: a leftover kube-system tracking-id from an earlier run must not be adopted.
go run ./lab/cmd/lab down >/dev/null 2>&1 || true
rm -rf "$LAB_DIR"
step "Starting the lab: kube-apiserver, etcd, kube-controller-manager, Argo CD $ARGOCD_VERSION (tracking: $TRACKING)"
kubeconfig_line=$(go run ./lab/cmd/lab up | tail -n 1)
export "${kubeconfig_line?}"
if [ "${KEEP_LAB:-}" != 1 ]; then
	trap 'go run ./lab/cmd/lab down >/dev/null 2>&1 || true' EXIT
fi
export PATH=$LAB_DIR/bin:$root/bin:$PATH
kubectl() { command kubectl --kubeconfig "$KUBECONFIG" "$@"; }

# wait_for DESCRIPTION SECONDS COMMAND...: poll until COMMAND succeeds.
wait_for() {
	local what=$1 timeout=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge $deadline ]; then
			echo "demo: timed out waiting for $what" >&2
			exit 1
		fi
		sleep 0.2
	done
}
app_field() { kubectl -n argocd get application "$app" -o "jsonpath=$1"; }
app_is() { [ "$(app_field '{.status.sync.status}/{.status.sync.revision}')" = "$1/$2" ]; }
kube_system_requires_pruning() {
	app_field '{range .status.resources[*]}{.kind}/{.name}={.requiresPruning}{"\n"}{end}' | grep -qx 'Namespace/kube-system=true'
}
refresh() { kubectl -n argocd annotate application "$app" argocd.argoproj.io/refresh=normal --overwrite >/dev/null; }

step "A git repository and an Application that syncs it (automated, prune: false)"
repo=$LAB_DIR/git
git init --quiet --bare --initial-branch=main "$repo/remote.git"
git clone --quiet "$repo/remote.git" "$repo/work" 2>/dev/null
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.invalid
app=platform-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$repo/work/manifests"
cat >"$repo/work/manifests/settings.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-settings
  namespace: default
data:
  owner: platform-team
EOF
git -C "$repo/work" add -A && git -C "$repo/work" commit --quiet -m "platform settings" && git -C "$repo/work" push --quiet origin main
kubectl apply -f - >/dev/null <<EOF
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: $app
  namespace: argocd
spec:
  project: default
  source: {repoURL: "file://$repo/remote.git", path: manifests, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: default}
  syncPolicy: {automated: {prune: false}}
EOF
rev=$(git -C "$repo/work" rev-parse HEAD)
wait_for "the app to sync" 120 app_is Synced "$rev"
show kubectl -n argocd get application "$app"

step "Someone commits the kube-system Namespace into the app's path; Argo CD syncs it"
cat >"$repo/work/manifests/kube-system.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: kube-system
EOF
git -C "$repo/work" add -A && git -C "$repo/work" commit --quiet -m "oops: kube-system" && git -C "$repo/work" push --quiet origin main
rev=$(git -C "$repo/work" rev-parse HEAD)
refresh
wait_for "the app to sync kube-system" 120 app_is Synced "$rev"
show kubectl get namespace kube-system -o jsonpath='{"labels:      "}{.metadata.labels}{"\n"}{"annotations: "}{.metadata.annotations.argocd\.argoproj\.io/tracking-id}{"\n"}'

step "The commit is reverted: the app is stuck OutOfSync, kube-system \"requires pruning\""
git -C "$repo/work" revert --no-edit HEAD >/dev/null && git -C "$repo/work" push --quiet origin main
rev=$(git -C "$repo/work" rev-parse HEAD)
refresh
wait_for "the app to be OutOfSync at the revert" 120 app_is OutOfSync "$rev"
wait_for "kube-system to require pruning" 60 kube_system_requires_pruning
show kubectl -n argocd get application "$app"
echo "A sync with PRUNE ticked would now try to delete kube-system (the API server refuses only for"
echo "default, kube-system and kube-public: any other namespace would be gone)."

step "unprune scan: every app stuck on resources that require pruning"
show unprune scan || true

step "unprune detach: preview first (nothing changes)"
show unprune detach "$app" --all || true

step "unprune detach --dry-run=server: the API server checks the patches (nothing changes)"
show unprune detach "$app" --all --dry-run=server || true

step "unprune detach --yes: release kube-system, and see the app Synced"
export XDG_STATE_HOME=$LAB_DIR/state
show unprune detach "$app" --all --yes

step "kube-system is intact; the app is Synced; a prune sync now deletes nothing"
show kubectl get namespace kube-system
show kubectl -n argocd get application "$app"
kubectl -n argocd patch application "$app" --type merge -p '{"operation":{"initiatedBy":{"username":"demo"},"sync":{"revision":"main","prune":true}}}' >/dev/null
wait_for "the prune sync to finish" 120 sh -c "[ \"\$(command kubectl --kubeconfig '$KUBECONFIG' -n argocd get application '$app' -o jsonpath='{.status.operationState.operation.initiatedBy.username}/{.status.operationState.phase}')\" = demo/Succeeded ]"
show kubectl get namespace kube-system
journal_file=$(ls "$XDG_STATE_HOME"/unprune/journal/*.json)
echo
echo "The journal of the change: $journal_file"
echo "(with KEEP_LAB=1 the lab stays up: undo with  KUBECONFIG=$KUBECONFIG bin/unprune undo $journal_file --yes)"

#!/usr/bin/env bash
# The incident, reproduced in the lab and resolved with unprune (README: `make demo`).
#
# A team commits Namespaces — kube-system, and two that hold other teams' data — into an Application's
# path; Argo CD syncs them; the commit is reverted. The app is now stuck OutOfSync with all three
# "requiring pruning". The trap is shown for real: a prune sync of one of them deletes it and all it
# holds. unprune then finds the rest, previews the fix, applies it, and shows the app Synced; a prune
# sync after it deletes nothing.
#
# Environment: ARGOCD_VERSION (v3.6.1), TRACKING (annotation+label), KEEP_LAB=1 to leave the lab running.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

export ARGOCD_VERSION=${ARGOCD_VERSION:-v3.6.1}
export TRACKING=${TRACKING:-annotation+label}
export LAB_DIR=$root/.lab/demo
export KCM=on APP_NAMESPACES="" INSTANCE_LABEL_KEY="" INSTALLATION_ID=""
# The demo's app is plain manifests: its repo-server needs neither helm nor kustomize, which are then
# not built (make demo), saving two minutes of a cold start.
export REPO_SERVER_TOOLS=off

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

# A fresh lab: a leftover kube-system tracking-id from an earlier run must not be adopted.
go run ./lab/cmd/lab down >/dev/null 2>&1 || true
rm -rf "$LAB_DIR"
step "Starting the lab: kube-apiserver, etcd, kube-controller-manager, Argo CD $ARGOCD_VERSION (tracking: $TRACKING; a repo-server for plain manifests, without helm and kustomize)"
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
requires_pruning() {
	app_field '{range .status.resources[*]}{.kind}/{.name}={.requiresPruning}{"\n"}{end}' | grep -qx "Namespace/$1=true"
}
# prune_sync [RESOURCES]: ask Argo CD for a sync with PRUNE ticked (of RESOURCES only: a JSON list of
# {group, kind, name}), and wait until that operation has succeeded.
prune_sync() {
	local who=demo-$RANDOM sync='{"revision":"main","prune":true}'
	if [ -n "${1:-}" ]; then
		sync="{\"revision\":\"main\",\"prune\":true,\"resources\":$1}"
	fi
	kubectl -n argocd patch application "$app" --type merge -p "{\"operation\":{\"initiatedBy\":{\"username\":\"$who\"},\"sync\":$sync}}" >/dev/null
	wait_for "the prune sync to finish" 120 sh -c "[ \"\$(command kubectl --kubeconfig '$KUBECONFIG' -n argocd get application '$app' -o jsonpath='{.status.operationState.operation.initiatedBy.username}/{.status.operationState.phase}')\" = $who/Succeeded ]"
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

step "Someone commits kube-system and two team Namespaces into the app's path; Argo CD syncs them"
for ns in kube-system payments sandbox; do
	cat >"$repo/work/manifests/namespace-$ns.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $ns
EOF
done
git -C "$repo/work" add -A && git -C "$repo/work" commit --quiet -m "oops: namespaces" && git -C "$repo/work" push --quiet origin main
rev=$(git -C "$repo/work" rev-parse HEAD)
refresh
wait_for "the app to sync the namespaces" 120 app_is Synced "$rev"
# The teams' data, created outside this app: what a deleted namespace takes with it.
for ns in payments sandbox; do
	kubectl -n "$ns" create configmap ledger --from-literal=owner="team-$ns" >/dev/null
done
show kubectl get namespace kube-system -o jsonpath='{"labels:      "}{.metadata.labels}{"\n"}{"annotations: "}{.metadata.annotations.argocd\.argoproj\.io/tracking-id}{"\n"}'

step "The commit is reverted: the app is stuck OutOfSync, the namespaces \"require pruning\""
git -C "$repo/work" revert --no-edit HEAD >/dev/null && git -C "$repo/work" push --quiet origin main
rev=$(git -C "$repo/work" rev-parse HEAD)
refresh
wait_for "the app to be OutOfSync at the revert" 120 app_is OutOfSync "$rev"
for ns in kube-system payments sandbox; do
	wait_for "$ns to require pruning" 60 requires_pruning "$ns"
done
show kubectl -n argocd get application "$app"

step "The trap, for real: someone syncs Namespace sandbox with PRUNE ticked"
prune_sync '[{"kind":"Namespace","name":"sandbox"}]'
wait_for "sandbox to be deleted" 120 sh -c "! command kubectl --kubeconfig '$KUBECONFIG' get namespace sandbox"
show kubectl get namespace sandbox || true
show kubectl -n sandbox get configmap ledger || true
echo "Namespace sandbox is gone, and with it everything it held. A full prune sync would do the same"
echo "to payments (the API server refuses only for default, kube-system and kube-public)."

step "unprune scan: every app stuck on resources that require pruning"
show unprune scan || true

step "unprune detach: preview first (nothing changes)"
show unprune detach "$app" --all || true

step "unprune detach --dry-run=server: the API server checks the patches (nothing changes)"
show unprune detach "$app" --all --dry-run=server || true

step "unprune detach --yes: release kube-system and payments, and see the app Synced"
export XDG_STATE_HOME=$LAB_DIR/state
show unprune detach "$app" --all --yes

step "The same trap after unprune: a full sync with PRUNE ticked deletes nothing"
prune_sync
show kubectl get namespace kube-system payments
show kubectl -n payments get configmap ledger
show kubectl -n argocd get application "$app"
journal_file=$(ls "$XDG_STATE_HOME"/unprune/journal/*.json)
echo
echo "The journal of the change: $journal_file"
echo "(with KEEP_LAB=1 the lab stays up: undo with  KUBECONFIG=$KUBECONFIG bin/unprune undo $journal_file --yes)"

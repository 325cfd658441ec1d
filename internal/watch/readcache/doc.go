// Package readcache is the watch's read cache: the Applications its informers hold, kept compact
// (App), and each destination's live answers — objects' metadata, full reads, the guard policy,
// counts — kept for a TTL and bounded by count and by bytes (ArgoCD). While reading again fails the
// last good answer is served, and what an evaluation could not read at all is recorded in its
// context (WithUnread, UnreadOf): it decides which rows' guards are unknown.
package readcache

// Package prometheus checks deploy/prometheus's alerting rules with Prometheus's own rule parser and
// PromQL engine, against metrics that unprune watch served in the lab. It is a module of its own:
// Prometheus's requirements would otherwise replace the tool's client-go.
package prometheus

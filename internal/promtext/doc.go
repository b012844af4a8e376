// Package promtext is the servers' and stubs' instrumentation: counters,
// histograms and read-at-scrape gauges on a registry of their own, served
// in the Prometheus text exposition format (version 0.0.4), with the Go
// runtime's and the process's metrics under the names
// prometheus/client_golang gives them.
//
// It replaces client_golang in the one netmgr binary because every
// command pays the package initialisation of everything linked in:
// client_golang's default registry, built at init with its Go collector
// (runtime/metrics' descriptions), procfs' regexps and the protobuf
// runtime under its data model were about a third of the instructions of
// `netexec --help`. This package does nothing at init. It writes what
// client_golang's text encoder writes for the same metrics: families
// sorted by name, each with its HELP and TYPE lines, the samples of a
// family sorted by their label values, histograms as cumulative _bucket
// series with an le label, then _sum and _count.
package promtext

// Package deploy holds gpudx's integrations with the systems that already
// watch GPU nodes: a node-problem-detector custom plugin monitor, an LBNL
// NHC check and a Slurm HealthCheckProgram, and Kubernetes manifests. It
// has no code; its tests run the shipped files against recorded kernel
// logs and decode the manifests strictly into the Kubernetes API types.
package deploy

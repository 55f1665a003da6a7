// Package printers is the table of every kind, as kubectl prints it and
// kube-apiserver serves it: each kind's columns (Kubernetes' names, the
// -o wide ones among them), its cells from an object and an injected
// clock (age.go formats ages as kubectl does: 5s, 3m20s, 2d), and
// PrintTable, kubectl's padded text form. skiffctl prints these tables;
// the apiserver's HTTP API answers them as meta.k8s.io/v1 Tables
// (kubetable.go), so kubectl get prints the same columns against Skiff.
//
// Everything is a pure function of the objects and the clock. It owns no
// I/O but the writer it is given; it does not fetch objects or events.
// skiffctl's -o custom-columns and --sort-by, over objects' JSON forms,
// are services/ctl/printers'.
package printers

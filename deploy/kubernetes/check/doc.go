// Package check validates the Kubernetes manifests of deploy/kubernetes
// offline, without a cluster: its test decodes every object strictly into
// the Kubernetes API types (an unknown or repeated field, a wrong type or
// an unknown kind fails) and checks how the objects fit together. It is a
// module of its own, so that the Kubernetes API packages stay out of
// pastenode's module; `make check-kubernetes` runs it.
package check

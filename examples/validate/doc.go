// Package validate checks the glue implloop ships for the engines that
// start workers (docs/scale-out.md): the composite action (action.yml) and
// the example workflow under examples/github-actions with actionlint, and
// the Kubernetes Indexed Job under examples/kubernetes by strict decoding
// into the Kubernetes API types. It is a module of its own so that the
// CLI's go.mod stays lean; make test runs it.
package validate

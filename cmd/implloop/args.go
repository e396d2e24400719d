package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// isCobraUsageError recognises the errors cobra returns for an unknown
// command or a wrong argument count, which are usage errors (exit 2).
func isCobraUsageError(err error) bool {
	if _, ok := err.(*usageError); ok {
		return false
	}
	if _, ok := err.(*exitCodeError); ok {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// exactArgs is cobra.ExactArgs with a usage error that names the command.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("run '"+cmd.CommandPath()+" --help' for usage", "%s: expected %s, got %d argument(s)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs with a usage error that names the command.
func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usagef("run '"+cmd.CommandPath()+" --help' for usage", "%s: expected %s, got %d arguments", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/plan"
)

// formFlag is --form: read a plan's tasks in one form only, for `plan`
// and `lint`.
type formFlag struct{ name string }

func (f *formFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "form", "", "read the tasks in this form only: "+plan.FormNames())
	_ = cmd.RegisterFlagCompletionFunc("form", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names := make([]string, len(plan.Forms))
		for i, f := range plan.Forms {
			names[i] = string(f)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

// options validates the flag: an unknown name is a usage error.
func (f *formFlag) options(command string) (plan.Options, error) {
	if f.name == "" {
		return plan.Options{}, nil
	}
	form, err := plan.ParseForm(f.name)
	if err != nil {
		return plan.Options{}, usagef("--form takes one of: "+plan.FormNames()+"; without it implloop picks the form (run 'implloop "+command+" --help')", "%s", err)
	}
	return plan.Options{Form: form}, nil
}

// printReading says how a plan's tasks were read: the form, the count and
// the notes ("2 checklist items under \"Completed\" read as context").
func printReading(w io.Writer, prefix string, p *plan.Plan) {
	fmt.Fprintf(w, "%s%s: %s\n", prefix, p.Path, p.Reading)
	for _, n := range p.Reading.Notes {
		fmt.Fprintf(w, "%s%s: note: %s\n", prefix, p.Path, n)
	}
}

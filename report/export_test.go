package report

// Test-only: the program writes the page with WriteHTML.

// HTML is the report as one self-contained HTML page: inline CSS and SVG,
// no script needed to read it (a few lines fold and unfold the diffs),
// light and dark, printable. Every text from the journal, the plan, an
// agent or the work tree goes through html/template: it is shown, never
// run. x may be nil (no diffs, no reasons).
func HTML(r *Report, x *Extras) []byte {
	b, err := htmlPage(r, x, "report.md")
	if err != nil { // our own templates over our own types
		panic(err)
	}
	return b
}

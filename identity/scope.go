package identity

// ScopeEntry is one row of the scope table: a part of an agent invocation,
// whether it is hashed, and why.
type ScopeEntry struct {
	// Key is the preimage's JSON key ("task.text" for a nested one,
	// "params.*" for every user param); empty for what is not hashed.
	Key string
	// What the part is.
	What string
	// Why it is (or is not) hashed.
	Why string
	// Reason is the short phrase explain and resume print when this field
	// differs ("task text changed"); only for hashed fields.
	Reason string
}

// hashedScope is the scope table: every part of the preimage, in the order
// Diff reports changes. Adding, removing or changing the meaning of a row
// changes identities: bump Version. (A new optional key that is absent when
// unset keeps every existing digest, but still belongs in this table.)
var hashedScope = []ScopeEntry{
	{"v", "the hash scope version, \"1\"", "a rule or scope change must make new identities, never reuse old ones", "identity version changed"},
	{"role", "the unit's role (`implement`, ...)", "each role asks the agent something different", "role changed"},
	{"agent", "the agent backend's name (`claude`, `codex`, `exec`, `builtin`, ...)", "a different agent is a different worker", "agent changed"},
	{"agent_cmd", "the exec backend's command line (`--agent-cmd`), split into arguments, each normalized (absent for presets and builtin)", "with --agent-cmd the command names the worker: another program or other arguments is another agent; paths in it are normalized so a moved project keeps its identities", "agent command changed"},
	{"model", "the model, when one is chosen (absent for the agent's default)", "a different model gives a different answer", "model changed"},
	{"instructions", "hex sha256 of the role's template bytes", "the instructions are what the agent is asked to do", "instructions changed"},
	{"task.id", "the task's id (`10`, `3.2`, `T010`)", "it names the task in the prompt and the context file", "task id changed"},
	{"task.text", "the task's normalized text", "an edit to a task must re-run it: this is the no-op-resume incident", "task text changed"},
	{"preamble_sha256", "sha256 of the normalized preamble (the plan's text before the first task, then any text after the last)", "shared context every task reads", "preamble changed"},
	{"plan_sha256", "sha256 of the plan's bytes on disk, only for units whose prompt reads the plan (only those units get it as IMPLLOOP_PLAN_SHA256)", "such a prompt carries the plan's path, not its bytes: without the hash a plan edit is invisible", "plan changed"},
	{"prompt", "a normalized free prompt (`implloop id`, outside tools)", "it is what the agent is asked", "prompt changed"},
	{"attempt", "the 1-based attempt number", "a retry must miss: with identical inputs a failed call would replay forever", "new attempt"},
	{"gate_feedback", "what a retry is told of the attempt before: its gate's normalized output, or the agent's failure (absent when none)", "it changes what the agent is asked to fix", "feedback from the failed attempt changed"},
	{"gate", "the normalized gate command the prompt tells the agent it must pass: the task's `verify` block, else `--verify` (absent when the task has no gate)", "the agent is told what will judge its work: another gate asks it for something else", "gate command changed"},
	{"artifacts", "sorted hashes of the artifacts of declared dependencies (absent when none are declared)", "a dependency's new output is new input; the order they are listed in is not", "dependency artifacts changed"},
	{"timeout_s", "the timeout in seconds (absent when none)", "a shorter timeout can change the outcome", "timeout changed"},
	{"env", "sorted NAMES of the environment variables passed through to the agent", "which variables an agent sees changes what it can do", "passed-through environment changed"},
	{"params.*", "user params (`--param k=v`), one key each", "they reach the agent's context", "param changed"},
}

// notHashedScope lists what is left out of the preimage on purpose, and why.
var notHashedScope = []ScopeEntry{
	{What: "environment variable values", Why: "a hashed secret is a durable oracle (the digest confirms a guess), and every rotation would invalidate the journal; only names are hashed"},
	{What: "the retry budget (`--max-attempts`)", Why: "how many tries are allowed changes no single try"},
	{What: "the on-blocked policy", Why: "it decides what happens after a block, not what the agent is asked"},
	{What: "the agent CLI's version", Why: "recorded in the journal, not hashed: every agent update would otherwise re-run every task"},
	{What: "the run id and timestamps", Why: "volatile by nature; they are normalized out of hashed text too"},
	{What: "the absolute project path, home and temp directories", Why: "a moved or re-cloned project is the same project; in hashed text they become `<PROJECT>`, `<HOME>`, `<TMP>`"},
	{What: "the task's title, index and count, and the plan's path (in the context the agent reads)", Why: "the title is part of the task text, which is hashed; a task's position changes nothing it is asked to do (but a task without an explicit id is named by its position, and its id is hashed: give tasks ids, `- [ ] 3.` or `### Task 3:`, so that inserting one renumbers nothing)"},
	{What: "the byte-exact text the agent receives", Why: "only its normalized form is hashed; the agent always gets the exact bytes"},
}

// scopeIndex returns the position of field's row in hashedScope, or its length
// for a field the table does not know.
func scopeIndex(field string) (int, *ScopeEntry) {
	for i := range hashedScope {
		k := hashedScope[i].Key
		if k == field || k == "params.*" && len(field) > len("params.") && field[:len("params.")] == "params." {
			return i, &hashedScope[i]
		}
	}
	return len(hashedScope), nil
}

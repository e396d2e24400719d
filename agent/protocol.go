package agent

import "strconv"

// The environment variables of the agent protocol (docs/agents.md).
const (
	EnvRunID       = "IMPLLOOP_RUN_ID"
	EnvTaskID      = "IMPLLOOP_TASK_ID"
	EnvAttempt     = "IMPLLOOP_ATTEMPT"
	EnvRole        = "IMPLLOOP_ROLE"
	EnvPlanSHA256  = "IMPLLOOP_PLAN_SHA256"
	EnvContextFile = "IMPLLOOP_CONTEXT_FILE"
	EnvPromptFile  = "IMPLLOOP_PROMPT_FILE"
)

// ProtocolEnv builds the IMPLLOOP_* environment of one call, so the loop
// builds it in one place. Empty string values are left out (a call whose
// context and prompt were not written to files gets no file variables).
func ProtocolEnv(runID, taskID string, attempt int, role, planSHA, contextFile, promptFile string) map[string]string {
	env := map[string]string{EnvAttempt: strconv.Itoa(attempt)}
	for k, v := range map[string]string{
		EnvRunID:       runID,
		EnvTaskID:      taskID,
		EnvRole:        role,
		EnvPlanSHA256:  planSHA,
		EnvContextFile: contextFile,
		EnvPromptFile:  promptFile,
	} {
		if v != "" {
			env[k] = v
		}
	}
	return env
}

// Package scripted holds what the scripted model API servers
// (internal/fakeclaude for Claude Code, internal/fakeopenai for the OpenAI
// Codex CLI) share, so that each server is only its own wire format:
//
//   - reading the task implloop attached to a prompt (TaskText, FileOps),
//   - writing JSON answers and server-sent events (WriteJSON, SSE, Chunks),
//   - an environment that keeps a real CLI on loopback and away from the
//     user's configuration (IsolatedEnv, Environ),
//   - finding the pinned CLI that `make e2e` installs (InstalledCLI,
//     ModuleRoot), and comparing dollar figures (CostEqual).
package scripted

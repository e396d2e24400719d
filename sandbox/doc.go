// Package sandbox runs one agent call (and, when asked, one gate) inside a
// sandbox built by a well-kept tool: bubblewrap (bwrap) on Linux,
// sandbox-exec with a generated Seatbelt profile on macOS. It builds the
// argv that wraps the call; it starts nothing itself and never touches
// implloop's journal.
//
// # What the call may write
//
// Everything is read-only except:
//
//   - the call's work tree: the main tree, or its own worktree under
//     --jobs (then not the main tree);
//   - what git needs to commit there: the objects, the refs (but not
//     implloop's), packed-refs, the logs, the index and HEAD of that tree;
//   - a private /tmp (Linux: an empty tmpfs that goes with the call;
//     macOS: a fresh TMPDIR removed after it);
//   - the agent CLI's own config and cache directories
//     (agent.ConfigDirs: ~/.claude, ~/.codex, ...), and the build caches a
//     gate needs ([Caches]: Go's build and module caches, npm, pip, cargo);
//   - the paths the user names (--sandbox-allow).
//
// Inside those, these stay read-only, whatever else is allowed:
// implloop's state directories (the journal, its blobs, the lock, the
// task worktrees of other calls), implloop's refs (refs/implloop/,
// refs/implloop-pull/), and what git would later run outside the sandbox
// on implloop's behalf: the repository's config, hooks and info/, the
// other worktrees' git directories, and a linked worktree's .git file.
//
// # Why the layout is pinned
//
// A read-only bind mount cannot be renamed away (the kernel refuses to
// move a mount point), but its parent could be: `mv .git/refs x` and a
// fresh .git/refs would leave implloop's refs behind and let `git gc
// --prune=now` take the boundaries they keep. So the writable directories
// on the way to a protected path (the git directory, refs/, objects/) are
// bound onto themselves: mount points too, which stay where they are.
// Seatbelt has no mounts; the profile denies unlinking those paths
// themselves (a rename unlinks its source) instead.
//
// implloop's refs are protected as loose files: a ref that only
// packed-refs holds could be dropped by rewriting packed-refs, which git
// must be able to write (branch deletion, pack-refs). Before each call,
// [Sandbox.Call] writes such a ref out as a loose file with the same
// value, taking git's own lock file for it. The agent's own `git gc` then
// packs what it can and leaves implloop's loose refs in place.
//
// # Processes
//
// On Linux each call gets its own PID namespace (--unshare-pid) that dies
// with bwrap (--die-with-parent), with the agent as its PID 1
// (--as-pid-1): when the agent exits, the kernel kills what is left in the
// namespace, a setsid daemon included, before bwrap sees the exit, so
// nothing of the call runs after it; and implloop's processes are not in
// its view, so it cannot signal them. It also gets its own session
// (--new-session: no terminal to inject keystrokes into) and no
// capabilities. On macOS the profile denies signals to processes outside
// the sandbox; a process that leaves the call's process group can outlive
// the call there, still inside the sandbox.
//
// # Network
//
// On by default (agents need their API). Options.NoNetwork (--sandbox-network
// none) gives the call its own empty network namespace on Linux and denies
// network access in the profile on macOS. /run is an empty tmpfs on Linux
// either way (except the resolver's files), so host sockets such as the
// Docker daemon's are out of reach unless allowed by path.
package sandbox
